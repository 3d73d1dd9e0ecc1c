package dev.layover.core.observability;

import static dev.layover.core.observability.ObservabilityFixtures.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.ConfigurationException;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A failed attempt keeps its stack trace in its {@code errors} entry, on the job row and on its
 * dead letter: bounded by {@code stackTraceChars}, secrets masked, causes kept.
 */
@DatabaseTest
class StackTraceTest {

    record Work(String text) {}

    static final String KEY = "sk-proj-Abc123DEF456ghi789JKL";
    static final String BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.abcdefghijklmnop.qrstuvwxyz12";
    static final String URL = "https://generativelanguage.googleapis.com/v1/models?key=AIzaSyD-1234567890abcdefghijklmnop&alt=sse";

    private static final ObjectMapper JSON = new ObjectMapper();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private JobType<Work> start(TestDatabase db, Function<Layover.Builder, Layover.Builder> config) {
        JobType<Work> type = JobType.builder("work", Work.class)
                .policy(ObservabilityFixtures.fastRetries(2))
                .handler((args, ctx) -> deep(40, args.text()))
                .build();
        layover = config.apply(ObservabilityFixtures.builder(db).register(type)).start();
        return type;
    }

    /** Fails 40 frames down, wrapping an IO error that carries secrets, as an SDK would. */
    private static dev.layover.core.outcome.Outcome deep(int depth, String text) {
        if (depth > 0) {
            return deep(depth - 1, text);
        }
        IOException io = new IOException("POST " + URL + " failed; header Authorization: " + BEARER);
        throw new IllegalStateException("call with api_key=" + KEY + " failed for " + text, new UncheckedIOException(io));
    }

    private static JsonNode errors(TestDatabase db, String sql, String id) throws Exception {
        return JSON.readTree((String) db.value(sql, id));
    }

    @Test
    void aFailedAttemptKeepsItsTraceBoundedAndMaskedOnTheJobAndItsDeadLetter(TestDatabase db) throws Exception {
        JobType<Work> type = start(db, b -> b);
        String id = layover.enqueue(type, new Work("doc-1")).id();
        Await.until(WAIT, "the job parked", () -> db.count("select count(*) from layover.dead_letters where job_id = ?", id) == 1);

        JsonNode errors = errors(db, "select errors::text from layover.dead_letters where job_id = ?", id);
        assertEquals(2, errors.size(), "one entry per failed attempt");
        for (JsonNode e : errors) {
            String trace = e.path("stack_trace").asText(null);
            assertNotNull(trace, "every failed attempt keeps its trace: " + e);
            assertTrue(trace.length() <= Layover.Builder.DEFAULT_STACK_TRACE_CHARS, "bounded: " + trace.length());
            assertTrue(trace.startsWith("java.lang.IllegalStateException: call with api_key=[masked] failed for doc-1"),
                    trace);
            assertTrue(trace.contains("\tat dev.layover.core.observability.StackTraceTest.deep(StackTraceTest.java:"), trace);
            assertTrue(trace.contains("Caused by: java.io.UncheckedIOException"), trace);
            assertTrue(trace.contains("Caused by: java.io.IOException: POST https://generativelanguage.googleapis.com/v1/models"
                    + "?key=[masked]&alt=sse failed; header Authorization: Bearer [masked]"), trace);
            assertTrue(trace.contains(" more"), "frames trimmed: " + trace);
            assertFalse(trace.contains("Abc123DEF456"), "the sk- key is masked");
            assertFalse(trace.contains("AIzaSyD-1234567890"), "the query key is masked");
            assertFalse(trace.contains("eyJhbGciOiJIUzI1NiJ9"), "the bearer token is masked");
        }
        // the message keeps what the handler said (the console masks it on screen); the trace is masked at rest
        assertTrue(errors.get(1).path("message").asText().contains("failed for doc-1"));
    }

    @Test
    void aSmallCapKeepsTheCausesAndZeroStoresNone(TestDatabase db) throws Exception {
        JobType<Work> type = start(db, b -> b.stackTraceChars(400));
        String id = layover.enqueue(type, new Work("doc-2")).id();
        Await.until(WAIT, "the job parked", () -> db.count("select count(*) from layover.dead_letters where job_id = ?", id) == 1);
        String trace = errors(db, "select errors::text from layover.dead_letters where job_id = ?", id)
                .get(0).path("stack_trace").asText();
        assertTrue(trace.length() <= 400, "bounded by the cap: " + trace.length());
        assertTrue(trace.contains("Caused by: java.io.UncheckedIOException"), "causes survive the cap: " + trace);
        layover.stop();

        JobType<Work> off = start(db, b -> b.stackTraceChars(0));
        String offId = layover.enqueue(off, new Work("doc-3")).id();
        Await.until(WAIT, "the job parked", () -> db.count("select count(*) from layover.dead_letters where job_id = ?", offId) == 1);
        JsonNode e = errors(db, "select errors::text from layover.dead_letters where job_id = ?", offId).get(0);
        assertTrue(e.path("stack_trace").isMissingNode(), "0 stores none: " + e);
        assertTrue(e.path("message").asText().contains("doc-3"));

        assertThrows(ConfigurationException.class, () -> Layover.builder(db.dataSource()).stackTraceChars(50));
    }

    @Test
    void aRetryingJobShowsItsTraceInLayoverJobs(TestDatabase db) throws Exception {
        JobType<Work> type = JobType.builder("slow-retry", Work.class)
                .policy(ObservabilityFixtures.fastRetries(3).withBackoff(java.time.Duration.ofMinutes(10),
                        java.time.Duration.ofMinutes(10)))
                .handler((args, ctx) -> deep(3, args.text()))
                .build();
        layover = ObservabilityFixtures.builder(db).register(type).start();
        String id = layover.enqueue(type, new Work("doc-4")).id();
        Await.until(WAIT, "an attempt failed", () -> db.count("select count(*) from layover.jobs where id = ? and attempts = 1", id) == 1);
        String trace = (String) db.value("select last_error ->> 'stack_trace' from layover.jobs where id = ?", id);
        assertNotNull(trace);
        assertTrue(trace.contains("api_key=[masked]"), trace);
    }
}
