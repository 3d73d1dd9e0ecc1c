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
        return start(Paths.get(javaExecutable()), mainClass, name, jvmArgs, args, env);
    }

    /**
     * Starts {@code mainClass} in a new JVM of another Java installation (for example a Java 21+
     * child of a Java 17 test run, {@link #javaAtLeast}), with this JVM's classpath.
     *
     * @param java the {@code java} executable
     * @param mainClass a class with a {@code main(String[])}, compiled for a release that JVM runs
     * @param name a name for the log file and messages
     * @param jvmArgs JVM options
     * @param args the program arguments
     * @param env variables added to this JVM's environment
     * @return the running process
     */
    public static JvmProcess start(Path java, Class<?> mainClass, String name, List<String> jvmArgs, List<String> args,
            java.util.Map<String, String> env) {
        String classpath = classpathOf(mainClass);
        List<String> cmd = new ArrayList<>();
        cmd.add(java.toString());
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

    /**
     * For a child's main, once it has started what it runs: blocks until the JVM ends (killed, or
     * {@link #exitWhenParentDies} halting it).
     *
     * @throws InterruptedException if the main thread is interrupted
     */
    public static void runUntilKilled() throws InterruptedException {
        new java.util.concurrent.CountDownLatch(1).await();
    }

    /**
     * A {@code java} executable of at least the given feature release: this JVM's when it is one;
     * else the one named by the system property {@code layover.test.java} (a {@code java}
     * executable or a Java home), when it is recent enough; else the newest under
     * {@code /usr/lib/jvm} (Debian and Ubuntu) or {@code /Library/Java/JavaVirtualMachines} (macOS)
     * whose {@code release} file says so.
     *
     * @param feature the least feature release, e.g. 21
     * @return the executable, or empty when none is found
     */
    public static java.util.Optional<Path> javaAtLeast(int feature) {
        if (Runtime.version().feature() >= feature) {
            return java.util.Optional.of(Paths.get(javaExecutable()));
        }
        String named = System.getProperty("layover.test.java");
        if (named != null && !named.isBlank()) {
            Path p = Paths.get(named);
            Path home = p.endsWith(Paths.get("bin", "java")) ? p.getParent().getParent() : p;
            if (featureOf(home) >= feature && Files.isExecutable(home.resolve("bin").resolve("java"))) {
                return java.util.Optional.of(home.resolve("bin").resolve("java")); // the one asked for wins
            }
        }
        List<Path> homes = new ArrayList<>();
        for (String root : List.of("/usr/lib/jvm", "/Library/Java/JavaVirtualMachines")) {
            try (java.util.stream.Stream<Path> dirs = Files.list(Paths.get(root))) {
                dirs.sorted().forEach(d -> {
                    homes.add(d);
                    homes.add(d.resolve("Contents").resolve("Home"));
                });
            } catch (IOException e) {
                // no such directory here
            }
        }
        Path best = null;
        int bestFeature = 0;
        for (Path home : homes) {
            int f = featureOf(home);
            Path java = home.resolve("bin").resolve("java");
            if (f >= feature && f > bestFeature && Files.isExecutable(java)) {
                best = java;
                bestFeature = f;
            }
        }
        return java.util.Optional.ofNullable(best);
    }

    /** The feature release in a Java home's {@code release} file ({@code JAVA_VERSION="25.0.1"}), or 0. */
    private static int featureOf(Path home) {
        try {
            for (String line : Files.readAllLines(home.resolve("release"))) {
                if (line.startsWith("JAVA_VERSION=")) {
                    String v = line.substring("JAVA_VERSION=".length()).replace("\"", "").trim();
                    String first = v.split("[.+\\-]")[0];
                    return Integer.parseInt(first.equals("1") ? v.split("\\.")[1] : first);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not a Java home
        }
        return 0;
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
     * Writes to the child's standard input, flushed at once (the Enter a program waits for).
     *
     * @param text what to write
     * @throws IllegalStateException when the child's input is closed (it exited)
     */
    public void input(String text) {
        try {
            process.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
            process.getOutputStream().flush();
        } catch (IOException e) {
            throw new IllegalStateException(name + " takes no more input: " + e.getMessage(), e);
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
