package dev.layover.core.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * layover.workers: each running instance has a row with its threads, version and heartbeat,
 * says within a second or two that it applies an operator's limit (and since when), loses its row
 * when it stops, and a row whose heartbeat is an hour old is deleted by another worker.
 */
@DatabaseTest
class WorkersTableTest {

    private static final Duration WAIT = Duration.ofSeconds(20);
    private Layover a;
    private Layover b;

    @AfterEach
    void stop() {
        for (Layover l : new Layover[] {a, b}) {
            if (l != null) {
                l.stop();
            }
        }
    }

    private static Layover start(TestDatabase db, String name, int threads) {
        return Layover.builder(db.dataSource()).workerName(name).threads(threads)
                .shutdownMaxWait(Duration.ofSeconds(5)).start();
    }

    private static Instant at(Object t) {
        return ((Timestamp) t).toInstant();
    }

    @Test
    void aRunningWorkerHasARowWithItsHeartbeatAndTheLimitsItAppliesAndLosesItWhenItStops(TestDatabase db) {
        a = start(db, "worker-a", 3);
        Await.equal(WAIT, "worker-a's row", 1L, () -> db.count("select count(*) from layover.workers where worker_name = 'worker-a'"));
        Map<String, Object> row = db.row("select * from layover.workers where worker_name = 'worker-a'");
        assertEquals(3, row.get("threads"));
        assertNotNull(row.get("host"));
        assertTrue(String.valueOf(row.get("version")).matches("\\d+\\.\\d+\\.\\d+.*"), "the build's version: " + row.get("version"));
        assertEquals("{}", String.valueOf(row.get("limits")));
        Instant first = at(row.get("heartbeat_at"));
        Await.until(WAIT, "a later heartbeat", () -> at(db.value(
                "select heartbeat_at from layover.workers where worker_name = 'worker-a'")).isAfter(first));

        a.providerStates().setLimit("openai:gpt-4o", LimitOverride.requestsPerMinute(120), "incident");
        Instant setAt = at(db.value("select set_at from layover.limit_overrides where limit_key = 'openai:gpt-4o'"));
        Await.until(WAIT, "worker-a says it applies the limit", () -> db.count("select count(*) from layover.workers "
                + "where worker_name = 'worker-a' and (limits -> 'openai:gpt-4o' ->> 'requests_per_minute')::float8 = 120") == 1);
        Instant applied = Instant.parse(((String) db.value("select limits -> 'openai:gpt-4o' ->> 'applied_at' "
                + "from layover.workers where worker_name = 'worker-a'")).replace(' ', 'T').replaceFirst("\\+00(:00)?$", "Z"));
        assertTrue(!applied.isBefore(setAt) && applied.isBefore(setAt.plusSeconds(5)),
                "applied within seconds of the set: set " + setAt + ", applied " + applied);
        Instant beat = at(db.value("select heartbeat_at from layover.workers where worker_name = 'worker-a'"));
        Await.until(WAIT, "another heartbeat", () -> at(db.value(
                "select heartbeat_at from layover.workers where worker_name = 'worker-a'")).isAfter(beat));
        assertEquals(applied.toString(), Instant.parse(((String) db.value("select limits -> 'openai:gpt-4o' ->> 'applied_at' "
                + "from layover.workers where worker_name = 'worker-a'")).replace(' ', 'T').replaceFirst("\\+00(:00)?$", "Z"))
                .toString(), "a heartbeat with the same limit keeps when it was applied");

        b = start(db, "worker-b", 1);
        Await.equal(WAIT, "two workers", 2L, () -> db.count("select count(*) from layover.workers"));
        a.stop();
        a = null;
        assertEquals(0L, db.count("select count(*) from layover.workers where worker_name = 'worker-a'"), "stopped: row gone");

        db.update("insert into layover.workers (worker_name, host, threads, started_at, heartbeat_at) "
                + "values ('died-long-ago', 'gone', 4, now() - interval '3 hours', now() - interval '2 hours')");
        Await.equal(WAIT, "the stale row deleted by worker-b's heartbeat", 0L,
                () -> db.count("select count(*) from layover.workers where worker_name = 'died-long-ago'"));
        assertEquals(1L, db.count("select count(*) from layover.workers where worker_name = 'worker-b'"));
    }
}
