package dev.layover.core.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamWriteConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.InvalidArgsException;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.internal.jobs.ArgsCodec;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Scenario 5: oversized and hostile input. Args at the size cap and one byte over; JSON nested
 * 10,000 deep at enqueue and in a stored row; provider errors of a megabyte, with NUL characters
 * and cut surrogate pairs; exceptions whose message cannot be read, null messages, and {@link
 * Error}s thrown by handlers. Nothing here may kill a worker thread, leave a row picked, or fail
 * a park.
 */
@DatabaseTest
class HostileInputReliabilityTest {

    record Doc(String text) {}

    record Tree(JsonNode body) {}

    /** A recursive args type: as deep as the JSON says. */
    record Node(Node child, int n) {}

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int CAP = 256 * 1024;
    private static final int MAX_MESSAGE = 2000;

    @Test
    void argsAtTheCapAreAcceptedAndRunAndOneByteOverIsRefused(TestDatabase db) {
        Set<String> ran = ConcurrentHashMap.newKeySet();
        JobType<Doc> doc = JobType.of("doc", Doc.class, (a, c) -> {
            ran.add(c.jobId() + ":" + a.text().length());
            return Outcome.done();
        });
        Layover layover = Reliability.builder(db).register(doc).build();
        int overhead = "{\"text\":\"\"}".length();
        // the cap counts UTF-8 bytes: 'é' is two
        String atCap = "é".repeat((CAP - overhead) / 2) + "x".repeat((CAP - overhead) % 2);
        assertEquals(CAP, ("{\"text\":\"" + atCap + "\"}").getBytes(StandardCharsets.UTF_8).length);
        String id = layover.enqueue(doc, new Doc(atCap)).id();
        var over = assertThrows(InvalidArgsException.class, () -> layover.enqueue(doc, new Doc(atCap + "x")));
        assertTrue(over.getMessage().contains((CAP + 1) + " bytes") && over.getMessage().contains("over the cap"),
                over.getMessage());
        var overByChar = assertThrows(InvalidArgsException.class,
                () -> layover.enqueue(doc, new Doc(atCap.substring(0, atCap.length() - 1) + "é")));
        assertTrue(overByChar.getMessage().contains("over the cap"), overByChar.getMessage());
        assertEquals(1, db.count("select count(*) from layover.jobs"));
        assertEquals(CAP, db.count("select octet_length(task_data) from layover.scheduled_tasks"));
        layover.start();
        try {
            Await.until(WAIT, "the job at the cap ran", () -> ran.contains(id + ":" + atCap.length()));
            Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("cap (bytes)", CAP);
            f.put("at the cap (multi-byte text)", "accepted, stored " + CAP + " bytes, ran");
            f.put("cap + 1 byte", "refused: " + over.getMessage());
            Reliability.report("scenario 5a: args size cap", f);
        } finally {
            layover.stop();
        }
    }

    @Test
    void jsonNestedTenThousandDeepIsRefusedAtEnqueueAndParkedBadArgsWhenStored(TestDatabase db) {
        Set<String> ran = ConcurrentHashMap.newKeySet();
        JobType<Tree> tree = JobType.of("tree", Tree.class, (a, c) -> {
            ran.add(c.jobId());
            return Outcome.done();
        });
        // a mapper without Jackson's nesting limit, as an application might configure it
        ObjectMapper unlimited = ArgsCodec.defaultMapper();
        unlimited.getFactory()
                .setStreamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(Integer.MAX_VALUE).build())
                .setStreamWriteConstraints(StreamWriteConstraints.builder().maxNestingDepth(Integer.MAX_VALUE).build());
        JobType<Node> node = JobType.builder("node", Node.class).objectMapper(unlimited)
                .handler((a, c) -> {
                    ran.add(c.jobId());
                    return Outcome.done();
                })
                .build();
        Layover layover = Reliability.builder(db).register(tree, node).build();

        ObjectNode root = JsonNodeFactory.instance.objectNode();
        ObjectNode at = root;
        for (int i = 0; i < 10_000; i++) {
            at = at.putObject("a");
        }
        var deep = assertThrows(InvalidArgsException.class, () -> layover.enqueue(tree, new Tree(root)));
        Node chain = null;
        for (int i = 0; i < 10_000; i++) {
            chain = new Node(chain, i);
        }
        Node deepChain = chain;
        var deepRecord = assertThrows(InvalidArgsException.class, () -> layover.enqueue(node, deepChain));
        String text = "{\"body\":" + "[".repeat(10_000) + "]".repeat(10_000) + "}";
        var deepText = assertThrows(InvalidArgsException.class, () -> layover.validateArgs("tree", text));
        assertEquals(0, db.count("select count(*) from layover.jobs"), "nothing was written");
        for (var e : List.of(deep, deepRecord, deepText)) {
            assertTrue(e.getMessage().toLowerCase().contains("nesting depth"), e.getMessage());
            assertTrue(e.getMessage().length() < 1000, "a clear, short message: " + e.getMessage());
        }

        // rows written by something else (an older version, a hand-made insert)
        String deepObject = "{\"child\":".repeat(10_000) + "null" + "}".repeat(10_000);
        db.update("insert into layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version)"
                + " values ('tree', 'deep-array', convert_to(?, 'UTF8'), now(), false, 1),"
                + "        ('node', 'deep-record', convert_to(?, 'UTF8'), now(), false, 1)", text, deepObject);
        for (int i = 0; i < 50; i++) {
            layover.enqueue(tree, new Tree(JsonNodeFactory.instance.objectNode().put("i", i)));
        }
        layover.start();
        try {
            Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            Map<String, Object> arrayDl = db.row("select failure_type, attempts, error_message,"
                    + " args is null as args_null, octet_length(args_raw) raw from layover.dead_letters where job_id = 'deep-array'");
            Map<String, Object> recordDl = db.row("select failure_type, attempts, error_message"
                    + " from layover.dead_letters where job_id = 'deep-record'");
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("enqueue of a 10,000-deep JsonNode", deep.getMessage());
            f.put("enqueue of a 10,000-deep record chain", deepRecord.getMessage());
            f.put("validateArgs of 10,000-deep text", deepText.getMessage());
            f.put("stored 10,000-deep array (default mapper)", arrayDl);
            f.put("stored 10,000-deep record (mapper without a depth limit)", recordDl);
            f.put("other jobs run", ran.size());
            Reliability.report("scenario 5b: deeply nested JSON", f);
            assertEquals("bad_args", arrayDl.get("failure_type"));
            assertEquals("bad_args", recordDl.get("failure_type"));
            assertEquals(0, recordDl.get("attempts"));
            assertEquals(50, ran.size(), "the other jobs ran");
        } finally {
            layover.stop();
        }
    }

    /** An exception whose message cannot be read. */
    static final class Hostile extends RuntimeException {
        private static final long serialVersionUID = 1L;

        @Override
        public String getMessage() {
            throw new IllegalStateException("getMessage() refuses");
        }
    }

    private static int depth(int n) {
        return n <= 0 ? 0 : 1 + depth(n - 1) + 0 * depth(0);
    }

    @Test
    void hostileErrorsAreStoredCutAndNeverFailAPark(TestDatabase db) {
        String mega = "provider says: " + "x".repeat(1024 * 1024);
        String emoji = "😀".repeat(3000); // surrogate pairs: a cut at 2,000 chars may split one
        String nul = "bad\u0000byte " + "y".repeat(100);
        Map<String, Supplier<Outcome>> cases = new LinkedHashMap<>();
        cases.put("mega-rejected", () -> Outcome.rejected(mega));
        cases.put("mega-transient", () -> Outcome.transientFailure(mega, new java.io.IOException(mega)));
        cases.put("mega-exception", () -> {
            throw new IllegalStateException(mega);
        });
        cases.put("emoji-park", () -> Outcome.park(emoji));
        cases.put("emoji-exception", () -> {
            throw new IllegalStateException(emoji);
        });
        cases.put("nul-park", () -> Outcome.park(nul));
        cases.put("nul-exception", () -> {
            throw new IllegalStateException(nul);
        });
        cases.put("message-throws", () -> {
            throw new Hostile();
        });
        cases.put("null-message", () -> {
            throw new IllegalStateException((String) null);
        });
        cases.put("stack-overflow", () -> {
            depth(Integer.MAX_VALUE);
            return Outcome.done();
        });
        cases.put("assertion-error", () -> {
            throw new AssertionError("invariant broken");
        });
        cases.put("error-message-throws", () -> {
            throw new Error() {
                private static final long serialVersionUID = 1L;

                @Override
                public String getMessage() {
                    throw new UnsupportedOperationException("nope");
                }
            };
        });
        Map<String, Integer> runs = new ConcurrentHashMap<>();
        JobType<Doc> hostile = JobType.builder("hostile", Doc.class)
                .policy(JobPolicy.defaults().withMaxAttempts(2).withBackoff(Duration.ofMillis(1), Duration.ofMillis(5)))
                .handler((a, c) -> {
                    runs.merge(c.jobId(), 1, Integer::sum);
                    Supplier<Outcome> s = cases.get(a.text());
                    return s == null ? Outcome.done() : s.get();
                })
                .build();
        Layover layover = Reliability.builder(db).register(hostile).heartbeat(Duration.ofMillis(500), 4).build();
        for (String name : cases.keySet()) {
            layover.enqueue(hostile, new Doc(name), dev.layover.core.EnqueueOptions.key(name));
        }
        for (int i = 0; i < 100; i++) {
            layover.enqueue(hostile, new Doc("fine-" + i));
        }
        layover.start();
        try {
            Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
            Map<String, Object> f = new LinkedHashMap<>();
            for (String name : cases.keySet()) {
                Map<String, Object> dl = db.row("select failure_type, attempts, error_class, error_message,"
                        + " length(error_message) len, (select max(length(e->>'message')) from jsonb_array_elements(errors) e) max_err"
                        + " from layover.dead_letters where job_id = ?", name);
                String msg = (String) dl.get("error_message");
                f.put(name, dl.get("failure_type") + ", attempts " + dl.get("attempts") + ", runs " + runs.get(name)
                        + ", " + dl.get("error_class") + ", message " + dl.get("len") + " chars (errors[] max "
                        + dl.get("max_err") + "): " + (msg == null ? null : msg.substring(0, Math.min(80, msg.length()))));
                assertNotNull(msg, name);
                assertTrue(((Number) dl.get("len")).intValue() <= MAX_MESSAGE, name + " message cut");
                assertTrue(dl.get("max_err") == null || ((Number) dl.get("max_err")).intValue() <= MAX_MESSAGE, name);
            }
            f.put("fine jobs run", runs.keySet().stream().filter(k -> !cases.containsKey(k)).count());
            Reliability.report("scenario 5c: hostile errors", f);
            assertEquals(cases.size(), db.count("select count(*) from layover.dead_letters"));
            assertEquals(100 + cases.size(), runs.size());
            assertEquals(0, db.count("select count(*) from layover.dead_letters where failure_type not in"
                    + " ('job_error', 'rejected', 'handler_parked', 'provider_unavailable')"));
            assertEquals(2, runs.get("message-throws"), "two attempts, then parked");
            assertTrue(((String) db.value("select error_message from layover.dead_letters where job_id = 'null-message'"))
                    .contains("IllegalStateException"));
            assertTrue(((String) db.value("select error_message from layover.dead_letters where job_id = 'stack-overflow'"))
                    .contains("StackOverflowError"));
            assertNull(db.value("select max(job_id) from layover.dead_letters where error_message like '%' || chr(65533) || '%'"
                    + " and job_id like 'emoji%' and error_message not like '%😀%'"));
        } finally {
            layover.stop();
        }
    }
}
