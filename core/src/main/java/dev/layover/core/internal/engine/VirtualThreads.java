package dev.layover.core.internal.engine;

import dev.layover.core.ConfigurationException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Virtual threads (Java 21 and newer) for {@code Layover.Builder#virtualThreads}, reached through
 * method handles: core compiles with {@code --release 17}, where {@code Thread.ofVirtual()} does not
 * exist. The one place that knows how; nothing else in Layover names the API.
 *
 * <p>The executor is db-scheduler's as it is with platform threads, a fixed pool of
 * {@code threads} workers over an unbounded queue, whose workers are virtual threads: at most
 * {@code threads} jobs run at once, and jobs picked ahead wait in the queue unstarted (what
 * {@link Lifeline} gives back), exactly as on platform threads.
 */
final class VirtualThreads {

    /** The first Java feature release with final virtual threads (JEP 444). */
    static final int SINCE = 21;

    /** {@code Thread.ofVirtual()}, {@code Thread.Builder.name(String, long)}, {@code .factory()}; null before 21. */
    private static final MethodHandle OF_VIRTUAL;
    private static final MethodHandle NAME;
    private static final MethodHandle FACTORY;

    static {
        MethodHandle ofVirtual = null;
        MethodHandle name = null;
        MethodHandle factory = null;
        if (Runtime.version().feature() >= SINCE) { // 19 and 20 have them as a preview only
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                Class<?> builder = Class.forName("java.lang.Thread$Builder");
                Class<?> ofVirtualType = Class.forName("java.lang.Thread$Builder$OfVirtual");
                ofVirtual = lookup.findStatic(Thread.class, "ofVirtual", MethodType.methodType(ofVirtualType));
                name = lookup.findVirtual(builder, "name", MethodType.methodType(builder, String.class, long.class));
                factory = lookup.findVirtual(builder, "factory", MethodType.methodType(ThreadFactory.class));
            } catch (ReflectiveOperationException e) {
                ofVirtual = null;
            }
        }
        OF_VIRTUAL = ofVirtual;
        NAME = name;
        FACTORY = factory;
    }

    private VirtualThreads() {}

    /** @return whether this JVM runs virtual threads */
    static boolean available() {
        return OF_VIRTUAL != null;
    }

    /**
     * @throws ConfigurationException when this JVM has no virtual threads (before Java 21)
     */
    static void require() {
        if (!available()) {
            throw new ConfigurationException("virtualThreads(true) needs Java " + SINCE + " or newer; this JVM is Java "
                    + Runtime.version() + " (" + System.getProperty("java.vm.name") + ", " + System.getProperty("java.home")
                    + "). Run it on Java " + SINCE + "+, or leave virtualThreads off (handlers on platform threads)");
        }
    }

    /**
     * A fixed pool of {@code threads} virtual threads named {@code prefix0}, {@code prefix1}, ...
     *
     * @param threads the most jobs running at once
     * @param prefix the threads' name prefix
     * @return the executor db-scheduler runs jobs on
     */
    static ExecutorService fixedPool(int threads, String prefix) {
        return new ThreadPoolExecutor(threads, threads, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                factory(prefix));
    }

    /**
     * @param prefix the threads' name prefix
     * @return a factory of virtual threads named {@code prefix0}, {@code prefix1}, ...
     */
    static ThreadFactory factory(String prefix) {
        require();
        try {
            return (ThreadFactory) FACTORY.invoke(NAME.invoke(OF_VIRTUAL.invoke(), prefix, 0L));
        } catch (Throwable e) {
            throw new IllegalStateException("cannot create a virtual thread factory", e);
        }
    }
}
