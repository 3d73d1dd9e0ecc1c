package dev.layover.core;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.JvmProcess;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Layover worker with {@code virtualThreads(true)} in a Java 21+ JVM, for {@link VirtualThreadsTest}:
 * enqueues {@code jobs} jobs, runs them on {@code threads} threads, and prints one line
 * {@code RESULT java=.. jobs=.. virtual=.. threads=.. maxInFlight=.. names=..}. The first
 * {@code threads} handlers wait for each other (so that many run at once); the rest pass through.
 *
 * <p>Arguments: JDBC URL, threads, jobs.
 */
public final class VirtualThreadsChild {

    /** The args of a job. */
    public record Work(int n) {}

    private VirtualThreadsChild() {}

    public static void main(String[] args) throws Exception {
        JvmProcess.exitWhenParentDies();
        int threads = Integer.parseInt(args[1]);
        int jobs = Integer.parseInt(args[2]);
        AtomicInteger virtual = new AtomicInteger();
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger maxInFlight = new AtomicInteger();
        Set<Thread> seen = ConcurrentHashMap.newKeySet();
        CountDownLatch together = new CountDownLatch(threads);
        CountDownLatch done = new CountDownLatch(jobs);
        java.lang.reflect.Method isVirtual = Thread.class.getMethod("isVirtual"); // Java 21; compiled for 17
        JobType<Work> work = JobType.builder("work", Work.class)
                .handler((a, ctx) -> {
                    maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                    try {
                        Thread t = Thread.currentThread();
                        seen.add(t);
                        if ((Boolean) isVirtual.invoke(t)) {
                            virtual.incrementAndGet();
                        }
                        together.countDown();
                        if (!together.await(60, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("only " + (threads - together.getCount()) + " ran at once");
                        }
                    } finally {
                        inFlight.decrementAndGet();
                        done.countDown();
                    }
                    return Outcome.done();
                })
                .build();
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(args[0]);
        cfg.setMaximumPoolSize(threads + 6);
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            Layover layover = Layover.builder(ds).register(work).virtualThreads(true).threads(threads)
                    .pollInterval(Duration.ofMillis(50)).giveBackAfter(Duration.ZERO).workerName("virtual-child").build();
            for (int i = 0; i < jobs; i++) {
                layover.enqueue(work, new Work(i));
            }
            layover.start();
            boolean all = done.await(60, TimeUnit.SECONDS);
            layover.awaitCompletions(Duration.ofSeconds(30));
            layover.stop();
            Set<String> names = new TreeSet<>();
            seen.forEach(t -> names.add(t.getName()));
            System.out.println("RESULT java=" + Runtime.version().feature() + " jobs=" + (jobs - done.getCount())
                    + " all=" + all + " virtual=" + virtual.get() + " threads=" + seen.size() + " maxInFlight="
                    + maxInFlight.get() + " names=" + String.join(",", names));
        }
        System.exit(0);
    }
}
