// A Kafka Streams application as a user writes one, run by failsafe's app kind on Kafka's own kafka-streams jars of
// the cluster's version (examples/apps/streams-*.toml, docs/apps.md):
//
//   java -cp "$STREAMS_CLASSPATH" FailsafeStreams.java map     each input record once, as {"id": VALUE, "by": PROCESS}
//   java -cp "$STREAMS_CLASSPATH" FailsafeStreams.java count   a running count per key, with a state store
//
// processing.guarantee is PROCESSING_GUARANTEE from the environment (exactly_once_v2 unless it says at_least_once).
// Kafka 4.1 or later (it leaves its group on close through CloseOptions, KIP-1092).
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;

public class FailsafeStreams {
    public static void main(String[] args) throws InterruptedException {
        Map<String, String> env = System.getenv();
        String mode = args.length > 0 ? args[0] : "map";
        String me = env.get("FAILSAFE_PROCESS");
        String output = env.get("FAILSAFE_OUTPUT_TOPICS").split(",")[0];

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, env.get("FAILSAFE_GROUP"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, env.get("FAILSAFE_BOOTSTRAP_SERVERS"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, env.getOrDefault("PROCESSING_GUARANTEE", "exactly_once_v2"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, env.get("FAILSAFE_STATE_DIR"));
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // A killed instance's tasks go to the others after 10 s, as the Python examples' (the consumer's default is 45 s).
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
        if (env.containsKey("COMMIT_INTERVAL_MS")) {
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(env.get("COMMIT_INTERVAL_MS")));
        }

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> input = builder.stream(Arrays.asList(env.get("FAILSAFE_INPUT_TOPICS").split(",")));
        if (mode.equals("count")) {
            input.groupByKey().count(Materialized.as("counts")).toStream().mapValues(String::valueOf).to(output);
        } else {
            input.mapValues(value -> "{\"id\":\"" + value + "\",\"by\":\"" + me + "\"}").to(output);
        }

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> System.out.println(me + ": " + before + " -> " + now));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Leave the group on a stop (Streams stays a member until its session times out by default): the next run of
            // the scenario finds the group empty.
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(10)));
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
