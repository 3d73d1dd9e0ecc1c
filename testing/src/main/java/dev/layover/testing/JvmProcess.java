package dev.layover.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM running a main class with this test JVM's classpath, for tests that need a second
 * process (two Layover instances in two JVMs) or a crash ({@link #kill()}: kill -9).
 *
 * <pre>{@code
 * try (JvmProcess child = JvmProcess.start(WorkerMain.class, "worker-a", jdbcUrl, fakeUrl)) {
 *     child.awaitOutput("started", Duration.ofSeconds(30));
 *     ...
 *     child.kill();
 * }
 * }</pre>
 *
 * <p>The classpath is the test classpath: Surefire's {@code surefire.test.class.path} when set
 * (Surefire may run tests from a manifest-only jar), else {@code java.class.path}. Standard output
 * and error go to one file, {@code target/jvm-processes/<name>-<time>.log} under the working
 * directory. The child's standard input is a pipe from this JVM: a child that calls
 * {@link #exitWhenParentDies()} exits when this JVM dies, so a crashed test run leaves no
 * process behind.
 */
public final class JvmProcess implements AutoCloseable {

    private final String name;
    private final Process process;
    private final Path output;

    private JvmProcess(String name, Process process, Path output) {
        this.name = name;
        this.process = process;
        this.output = output;
    }

    /**
     * Starts {@code mainClass} in a new JVM.
     *
     * @param mainClass a class with a {@code main(String[])}
     * @param name a name for the log file and messages
     * @param args the program arguments
     * @return the running process
     */
    public static JvmProcess start(Class<?> mainClass, String name, String... args) {
        return start(mainClass, name, List.of("-Xmx256m"), List.of(args));
    }

    /**
     * Starts {@code mainClass} in a new JVM with JVM options.
     *
     * @param mainClass a class with a {@code main(String[])}
     * @param name a name for the log file and messages
     * @param jvmArgs JVM options, e.g. {@code -Dx=y}
     * @param args the program arguments
     * @return the running process
     */
    public static JvmProcess start(Class<?> mainClass, String name, List<String> jvmArgs, List<String> args) {
        return start(mainClass, name, jvmArgs, args, java.util.Map.of());
    }

    /**
     * Starts {@code mainClass} in a new JVM with JVM options and environment variables (for
     * example {@code LD_PRELOAD} and {@code FAKETIME} for a JVM whose clock is off: {@link #faketime}).
     *
     * @param mainClass a class with a {@code main(String[])}
     * @param name a name for the log file and messages
     * @param jvmArgs JVM options, e.g. {@code -Dx=y}
     * @param args the program arguments
     * @param env variables added to this JVM's environment
     * @return the running process
     */
    public static JvmProcess start(Class<?> mainClass, String name, List<String> jvmArgs, List<String> args,
            java.util.Map<String, String> env) {
        String classpath = classpathOf(mainClass);
        List<String> cmd = new ArrayList<>();
        cmd.add(javaExecutable());
        cmd.addAll(jvmArgs);
        cmd.add("-cp");
        cmd.add(classpath);
        cmd.add(mainClass.getName());
        cmd.addAll(args);
        try {
            Path dir = Paths.get("target", "jvm-processes");
            Files.createDirectories(dir);
            String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("HHmmss-SSS"));
            Path out = dir.resolve(name.replaceAll("[^A-Za-z0-9._-]", "_") + "-" + stamp + ".log");
            ProcessBuilder pb = new ProcessBuilder(cmd);
            pb.environment().putAll(env);
            Process p = pb
                    .redirectErrorStream(true)
                    .redirectOutput(out.toFile())
                    .redirectInput(ProcessBuilder.Redirect.PIPE)
                    .start();
            return new JvmProcess(name, p, out.toAbsolutePath());
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + name + ": " + e.getMessage(), e);
        }
    }

    /**
     * The class path that loaded {@code mainClass}: surefire's test class path, the URLs of an
     * isolated class loader (as {@code exec:java} uses), or this JVM's class path.
     */
    private static String classpathOf(Class<?> mainClass) {
        String surefire = System.getProperty("surefire.test.class.path");
        if (surefire != null && !surefire.isBlank()) {
            return surefire;
        }
        if (mainClass.getClassLoader() instanceof java.net.URLClassLoader loader && loader.getURLs().length > 0) {
            List<String> paths = new ArrayList<>();
            for (java.net.URL url : loader.getURLs()) {
                try {
                    paths.add(Paths.get(url.toURI()).toString());
                } catch (java.net.URISyntaxException | IllegalArgumentException e) {
                    // not a file URL: cannot be on a class path
                }
            }
            return String.join(java.io.File.pathSeparator, paths);
        }
        return System.getProperty("java.class.path");
    }

    /**
     * The environment that runs a child JVM with its wall clock shifted (libfaketime, Debian's
     * {@code faketime} package): {@code System.currentTimeMillis} and {@code Instant.now} read
     * {@code offset} from the real time, {@code System.nanoTime} is left alone.
     *
     * @param offset how far the child's clock is off (positive: ahead)
     * @return the variables, or empty when libfaketime is not installed here
     */
    public static java.util.Optional<java.util.Map<String, String>> faketime(java.time.Duration offset) {
        for (String lib : List.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1")) {
            if (Files.exists(Paths.get(lib))) {
                long s = offset.toSeconds();
                return java.util.Optional.of(java.util.Map.of("LD_PRELOAD", lib, "FAKETIME", (s >= 0 ? "+" : "") + s + "s",
                        "FAKETIME_DONT_FAKE_MONOTONIC", "1", "FAKETIME_NO_CACHE", "1"));
            }
        }
        return java.util.Optional.empty();
    }

    /**
     * For a child's main: exits the JVM (without shutdown hooks, like a crash) when standard input
     * ends, that is when the parent test JVM dies or {@link #kill()}s it.
     */
    public static void exitWhenParentDies() {
        Thread t = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // wait for end of file
                }
            } catch (IOException e) {
                // the pipe broke: the parent is gone
            }
            Runtime.getRuntime().halt(3);
        }, "parent-watch");
        t.setDaemon(true);
        t.start();
    }

    private static String javaExecutable() {
        return ProcessHandle.current().info().command()
                .orElse(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    }

    /** @return the process id */
    public long pid() {
        return process.pid();
    }

    /** @return the name given at start */
    public String name() {
        return name;
    }

    /** @return the file holding the child's output */
    public Path outputFile() {
        return output;
    }

    /** @return the child's output so far */
    public String output() {
        try {
            return Files.readString(output, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    /** @return whether the child is running */
    public boolean isAlive() {
        return process.isAlive();
    }

    /**
     * Waits until the child's output contains {@code text}.
     *
     * @param text the text
     * @param timeout the longest wait
     * @throws AssertionError when the child exits first or the timeout passes, with its output
     */
    public void awaitOutput(String text, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!output().contains(text)) {
            if (!process.isAlive()) {
                throw new AssertionError(name + " exited (" + process.exitValue() + ") before printing '" + text
                        + "'; output:\n" + output());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + name + " to print '" + text
                        + "'; output:\n" + output());
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
    }

    /**
     * Kills the child at once (SIGKILL: no shutdown hooks, no graceful stop) and waits for it to
     * be gone.
     */
    public void kill() {
        process.destroyForcibly();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + " (pid " + pid() + ") did not die within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Waits for the child to exit by itself.
     *
     * @param timeout the longest wait
     * @return its exit code
     * @throws AssertionError when it is still running after the timeout
     */
    public int waitFor(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError(name + " still running after " + timeout);
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Kills the child if it still runs. */
    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        }
    }

    @Override
    public String toString() {
        return "JvmProcess[" + name + ", pid " + process.pid() + ", " + output + "]";
    }
}
