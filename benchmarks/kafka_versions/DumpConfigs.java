/*
 * DumpConfigs prints every ConfigDef key Kafka declares, read from the jars on its classpath (one release's libs/*),
 * not from its docs: one tab-separated line per key, FAMILY KEY TYPE DEFAULT IMPORTANCE VALIDATOR, families in the
 * order below and keys sorted within each. The families: broker (kafka.server.KafkaConfig.configDef()), topic
 * (org.apache.kafka.storage.internals.log.LogConfig.configDefCopy()), group, the dynamic group configs
 * (org.apache.kafka.coordinator.group.GroupConfig.CONFIG_DEF), and producer, consumer and admin
 * (ProducerConfig/ConsumerConfig/AdminClientConfig.configDef(), which include their internal keys). A key with no
 * default prints <NO_DEFAULT>, a null default prints null, a list prints [a,b], a class its name, and a password's
 * non-null default [hidden]. A family whose class or member this release lacks is not printed; a line
 * "unavailable<TAB>FAMILY<TAB>REASON" on stderr says so. Tabs and newlines inside a field print as spaces.
 *
 *     javac -cp 'KAFKA/libs/*' -d OUT DumpConfigs.java && java -cp "OUT:KAFKA/libs/*" DumpConfigs
 *
 * Made by benchmarks/kafka_config_diff.py, which compares two releases' output.
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;

public class DumpConfigs {
    private static final String[][] FAMILIES = {
        {"broker", "kafka.server.KafkaConfig", "configDef"},
        {"topic", "org.apache.kafka.storage.internals.log.LogConfig", "configDefCopy"},
        {"group", "org.apache.kafka.coordinator.group.GroupConfig", "CONFIG_DEF"},
        {"producer", "org.apache.kafka.clients.producer.ProducerConfig", "configDef"},
        {"consumer", "org.apache.kafka.clients.consumer.ConsumerConfig", "configDef"},
        {"admin", "org.apache.kafka.clients.admin.AdminClientConfig", "configDef"},
    };

    /** The ConfigDef a static method or static field of that class holds. */
    private static ConfigDef configDef(String className, String member) throws ReflectiveOperationException {
        Class<?> cls = Class.forName(className);
        try {
            Method method = cls.getMethod(member);
            return (ConfigDef) method.invoke(null);
        } catch (NoSuchMethodException e) {
            Field field = cls.getField(member);
            return (ConfigDef) field.get(null);
        }
    }

    private static String format(Object value) {
        if (value == ConfigDef.NO_DEFAULT_VALUE) {
            return "<NO_DEFAULT>";
        }
        if (value == null) {
            return "null";
        }
        if (value instanceof List) {
            StringBuilder sb = new StringBuilder("[");
            List<?> list = (List<?>) value;
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    sb.append(',');
                }
                sb.append(list.get(i));
            }
            return sb.append(']').toString();
        }
        if (value instanceof Class) {
            return ((Class<?>) value).getName();
        }
        return String.valueOf(value);
    }

    private static String field(Object value) {
        return String.valueOf(value).replace('\t', ' ').replace('\r', ' ').replace('\n', ' ');
    }

    public static void main(String[] args) {
        for (String[] family : FAMILIES) {
            ConfigDef def;
            try {
                def = configDef(family[1], family[2]);
            } catch (ReflectiveOperationException | LinkageError | ClassCastException e) {
                System.err.println("unavailable\t" + family[0] + "\t" + field(e));
                continue;
            }
            for (Map.Entry<String, ConfigDef.ConfigKey> entry : new TreeMap<>(def.configKeys()).entrySet()) {
                ConfigDef.ConfigKey key = entry.getValue();
                boolean hidden = key.type == ConfigDef.Type.PASSWORD
                    && key.defaultValue != null
                    && key.defaultValue != ConfigDef.NO_DEFAULT_VALUE;
                String[] columns = {
                    family[0],
                    entry.getKey(),
                    String.valueOf(key.type),
                    hidden ? "[hidden]" : format(key.defaultValue),
                    String.valueOf(key.importance),
                    key.validator == null ? "" : String.valueOf(key.validator),
                };
                StringBuilder line = new StringBuilder();
                for (int i = 0; i < columns.length; i++) {
                    if (i > 0) {
                        line.append('\t');
                    }
                    line.append(field(columns[i]));
                }
                System.out.println(line);
            }
        }
    }
}
