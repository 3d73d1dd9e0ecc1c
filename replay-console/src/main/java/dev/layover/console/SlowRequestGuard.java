package dev.layover.console;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.component.AbstractLifeCycle;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * Closes connections that take too long to send a request's line and headers (a "slowloris"
 * client that trickles a header a byte at a time: the idle timeout alone never fires on it).
 *
 * <p>Jetty parses headers without holding a request thread, so such clients cannot starve the
 * others of threads; this guard makes sure they also give their connection back. Every
 * {@code period} it looks at each open connection: a connection that has received bytes of a
 * request which has not begun (no new request since those bytes, none in progress) for longer
 * than the header timeout is closed. Keep-alive connections that send nothing are left to the
 * idle timeout.
 */
final class SlowRequestGuard extends AbstractLifeCycle implements Connection.Listener {

    private static final byte[] TIMED_OUT = ("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n"
            + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);

    private final long timeoutNanos;
    private final long periodMillis;
    private final Scheduler scheduler;
    private final Map<Connection, Progress> open = new ConcurrentHashMap<>();
    private volatile Scheduler.Task task;

    /** What a connection had done when it last made progress. */
    private static final class Progress {
        long requests;
        long bytes;
        long partialSince = -1;
    }

    SlowRequestGuard(long timeoutMillis, Scheduler scheduler) {
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        this.periodMillis = Math.max(50, Math.min(1000, timeoutMillis / 4));
        this.scheduler = scheduler;
    }

    @Override
    protected void doStart() {
        schedule();
    }

    @Override
    protected void doStop() {
        Scheduler.Task t = task;
        if (t != null) {
            t.cancel();
        }
        open.clear();
    }

    private void schedule() {
        if (isRunning() || isStarting()) {
            task = scheduler.schedule(this::sweep, periodMillis, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public void onOpened(Connection connection) {
        open.put(connection, new Progress());
    }

    @Override
    public void onClosed(Connection connection) {
        open.remove(connection);
    }

    private void sweep() {
        long now = System.nanoTime();
        try {
            open.forEach((c, p) -> {
                long requests = c.getMessagesIn();
                long bytes = c.getBytesIn();
                if (requests != p.requests || requests > c.getMessagesOut()) {
                    // a new request began, or one is being handled: progress
                    p.requests = requests;
                    p.bytes = bytes;
                    p.partialSince = -1;
                } else if (bytes > p.bytes) {
                    if (p.partialSince < 0) {
                        p.partialSince = now;
                    } else if (now - p.partialSince > timeoutNanos) {
                        open.remove(c);
                        TimeoutException why = new TimeoutException("the request's headers took longer than "
                                + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
                        // no request has begun on it, so nothing else writes to it: say why, then close
                        EndPoint end = c.getEndPoint();
                        end.write(Callback.from(() -> end.close(why), x -> end.close(why)),
                                ByteBuffer.wrap(TIMED_OUT.clone()));
                    }
                }
            });
        } finally {
            schedule();
        }
    }
}
