package dev.layover.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Running server binaries (Postgres, PgBouncer) for the fixtures that start their own: as the
 * {@code postgres} OS user when this JVM runs as root (initdb, postgres and pgbouncer refuse root),
 * in a scratch directory that user owns.
 */
final class ServerProcesses {

    /** The OS user the servers run as when this JVM is root. */
    static final String SERVICE_USER = "postgres";

    private ServerProcesses() {}

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /** Why servers cannot be run as {@link #SERVICE_USER} from here, if they cannot. */
    static Optional<String> serviceUserMissing() {
        if (!isRoot()) {
            return Optional.empty();
        }
        if (!Files.isExecutable(Paths.get("/usr/sbin/runuser")) && !Files.isExecutable(Paths.get("/sbin/runuser"))) {
            return Optional.of("running as root and runuser is missing (needed to run the servers as " + SERVICE_USER + ")");
        }
        try {
            Paths.get("/").getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(SERVICE_USER);
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of("running as root and there is no OS user '" + SERVICE_USER + "' to run the servers as");
        }
    }

    /** {@code cmd}, prefixed to run as {@link #SERVICE_USER} when this JVM is root. */
    static List<String> asServiceUser(List<String> cmd) {
        if (!isRoot()) {
            return cmd;
        }
        List<String> out = new ArrayList<>(List.of("runuser", "-u", SERVICE_USER, "--"));
        out.addAll(cmd);
        return out;
    }

    /** A fresh scratch directory, owned by {@link #SERVICE_USER} when this JVM is root. */
    static Path scratchDirectory(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(prefix);
        giveToServiceUser(dir);
        return dir;
    }

    static void giveToServiceUser(Path path) throws IOException {
        if (isRoot()) {
            UserPrincipal user = path.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(SERVICE_USER);
            Files.setOwner(path, user);
        }
    }

    /**
     * Runs a command (as the service user) and waits for it.
     *
     * @return its output (standard output and error)
     * @throws IllegalStateException when it fails or outlives {@code timeout}, with its output
     */
    static String run(List<String> cmd, Duration timeout) {
        List<String> full = asServiceUser(cmd);
        try {
            Path out = Files.createTempFile("layover-cmd", ".out");
            try {
                Process p = new ProcessBuilder(full).redirectErrorStream(true).redirectOutput(out.toFile())
                        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
                if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    p.destroyForcibly();
                    throw new IllegalStateException("timed out after " + timeout + ": " + String.join(" ", full)
                            + "\n" + Files.readString(out, StandardCharsets.UTF_8));
                }
                String text = Files.readString(out, StandardCharsets.UTF_8);
                if (p.exitValue() != 0) {
                    throw new IllegalStateException("exit " + p.exitValue() + ": " + String.join(" ", full) + "\n" + text);
                }
                return text;
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", full) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + String.join(" ", full), e);
        }
    }

    /** A TCP port free on 127.0.0.1 right now. */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("no free port: " + e.getMessage(), e);
        }
    }

    /** Copies {@code file} (a server log) to {@code target/server-logs/}, for a look after the test. */
    static void keepLog(Path file, String name) {
        try {
            if (Files.exists(file)) {
                Path dir = Paths.get("target", "server-logs");
                Files.createDirectories(dir);
                Files.copy(file, dir.resolve(name + "-" + System.currentTimeMillis() + ".log"),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            // a log we could not keep is no reason to fail the test
        }
    }

    static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // a server may still be writing its last log line; the directory is temporary anyway
        }
    }
}
