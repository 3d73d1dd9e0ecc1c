package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The standalone program: options, a clear one-line error and exit code 2, the token printed once. */
@DatabaseTest
class ConsoleMainTest {

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private ConsoleMain.Launch launch(Map<String, String> env, String... args) {
        return ConsoleMain.launch(args, env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private void assertOneLineError(String contains) {
        String e = err();
        assertTrue(e.startsWith("layover-console: "), e);
        assertEquals(1, e.strip().lines().count(), "one line, no stack trace: " + e);
        assertFalse(e.contains("\tat "), e);
        assertTrue(e.contains(contains), e);
    }

    @Test
    void withoutADatabaseItExitsWith2AndSaysHowToGiveOne() {
        ConsoleMain.Launch l = launch(Map.of());
        assertEquals(ConsoleMain.EXIT_FAILED, l.exitCode());
        assertNull(l.console());
        assertOneLineError("--jdbc-url");
    }

    @Test
    void anUnreachableDatabaseIsOneLineOnStderrAndExitCode2() {
        ConsoleMain.Launch l = launch(Map.of(), "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=u&password=hunter2",
                "--port", "0");
        assertEquals(2, l.exitCode());
        assertOneLineError("cannot connect to the database at jdbc:postgresql://127.0.0.1:1/nowhere");
        assertFalse(err().contains("hunter2"), "the password is not printed: " + err());
    }

    @Test
    void aDatabaseWithoutTheSchemaIsRefusedUnlessAskedToMigrate(TestDatabase db) {
        TestDatabase empty = LayoverPostgresExtension.emptyDatabase();
        try {
            ConsoleMain.Launch l = launch(Map.of("LAYOVER_JDBC_URL", empty.jdbcUrl()), "--port", "0");
            assertEquals(2, l.exitCode());
            assertOneLineError("--migrate");

            err.reset();
            try (ConsoleMain.Launch ok = launch(Map.of("LAYOVER_JDBC_URL", empty.jdbcUrl()), "--port", "0", "--migrate")) {
                assertEquals(0, ok.exitCode(), err());
                assertTrue(out().contains("migrated"), out());
            }
        } finally {
            empty.close();
        }
    }

    @Test
    void itStartsPrintsTheGeneratedTokenOnceAndServesTheApi(TestDatabase db) {
        try (ConsoleMain.Launch l = launch(Map.of(), "--jdbc-url", db.jdbcUrl(), "--port=0", "--read-only")) {
            assertEquals(0, l.exitCode(), err());
            String token = l.console().token();
            assertEquals(2, out().split(java.util.regex.Pattern.quote(token), -1).length - 1,
                    "the token is printed once, on its own line and in the link: " + out());
            assertTrue(out().contains(l.console().loginUrl().toString()), out());
            assertTrue(l.console().readOnly());
            assertEquals(200, new ApiClient(l.console()).get("/api/overview").status());
        }
    }

    @Test
    void aConfiguredTokenFromTheEnvironmentIsUsedAndNotPrinted(TestDatabase db) {
        try (ConsoleMain.Launch l = launch(Map.of("LAYOVER_JDBC_URL", db.jdbcUrl(), "LAYOVER_CONSOLE_TOKEN", Fixtures.TOKEN),
                "--port", "0", "--bind", "127.0.0.1")) {
            assertEquals(0, l.exitCode(), err());
            assertEquals(Fixtures.TOKEN, l.console().token());
            assertFalse(out().contains(Fixtures.TOKEN), out());
        }
    }

    @Test
    void badOptionsAreOneLineErrorsWithExitCode2() {
        assertEquals(2, launch(Map.of(), "--port").exitCode());
        assertOneLineError("--port needs a value");
        err.reset();
        assertEquals(2, launch(Map.of(), "--port", "http").exitCode());
        assertOneLineError("--port");
        err.reset();
        assertEquals(2, launch(Map.of(), "--colour", "red").exitCode());
        assertOneLineError("unknown option");
        err.reset();
        assertEquals(2, launch(Map.of(), "--jdbc-url", "jdbc:mysql://x/y").exitCode());
        assertOneLineError("jdbc:postgresql:");
        err.reset();
        assertEquals(2, launch(Map.of(), "--jdbc-url", "jdbc:postgresql://x/y", "--token", "short").exitCode());
        assertOneLineError("at least 16");
        assertEquals(0, launch(Map.of(), "--help").exitCode());
        assertTrue(out().contains("--jdbc-url"));
        assertTrue(out().contains("--version"));
    }

    @Test
    void versionPrintsTheArtifactsVersion() {
        assertEquals(0, launch(Map.of(), "--version").exitCode());
        assertTrue(out().strip().matches("layover-replay-console \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?"), out());
    }

    @Test
    void aTakenPortIsAOneLineError(TestDatabase db) {
        try (ConsoleMain.Launch first = launch(Map.of(), "--jdbc-url", db.jdbcUrl(), "--port", "0",
                "--token", Fixtures.TOKEN)) {
            err.reset();
            ConsoleMain.Launch second = launch(Map.of(), "--jdbc-url", db.jdbcUrl(), "--port",
                    String.valueOf(first.console().port()));
            assertEquals(2, second.exitCode());
            assertOneLineError("cannot listen on 127.0.0.1:" + first.console().port());
        }
    }
}
