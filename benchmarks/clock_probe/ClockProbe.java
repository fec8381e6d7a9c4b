import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/** Prints, every 200 ms of timed waits (a Thread.sleep of 100 ms, then a 100 ms task of a scheduled executor), what
 * the JVM's two clocks say: System.currentTimeMillis and System.nanoTime. benchmarks/clock_probe.py reads the lines as
 * they come, against its own real clocks. */
public class ClockProbe {
  public static void main(String[] args) throws Exception {
    int lines = Integer.parseInt(args[0]);
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try {
      for (int i = 0; i < lines; i++) {
        Thread.sleep(100);
        timer.schedule(() -> {}, 100, TimeUnit.MILLISECONDS).get();
        System.out.println(System.currentTimeMillis() + " " + System.nanoTime());
        System.out.flush();
      }
    } finally {
      timer.shutdown();
    }
  }
}
