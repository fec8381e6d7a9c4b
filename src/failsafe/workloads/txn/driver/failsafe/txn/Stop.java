/*
 * Stopping: set on SIGTERM or when stdin closes (TxnDriver.main); the writer and the processor stop after their current
 * transaction.
 */
package failsafe.txn;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

final class Stop {
    final CountDownLatch latch = new CountDownLatch(1);

    void set() {
        latch.countDown();
    }

    boolean stopped() {
        return latch.getCount() == 0;
    }

    /** Wait up to nanos; true when stopped meanwhile. */
    boolean await(long nanos) {
        try {
            return latch.await(Math.max(0, nanos), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        }
    }
}
