package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.layover.core.spi.Db;
import dev.layover.testing.Await;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The coalesced bucket takes on a real database: takes that wait behind a statement in flight
 * share the next one (a key at most once per statement), and every key's bucket gives exactly
 * its capacity whatever the statements' grouping.
 */
@ExtendWith(LayoverPostgresExtension.class)
class TakesTest {

    /** One request a second, a burst of 3: three permits now, then none (the clock stands still). */
    private static void buckets(TestDatabase db, int keys) {
        db.update("insert into layover.buckets (provider_key, requests_per_minute, burst_ms)"
                + " select 'k' || g, 60, 3000 from generate_series(0, ?) g", keys - 1);
    }

    private static Takes.Take take(String key, OffsetDateTime now) {
        return new Takes.Take(key, now, 1.0, 3.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, false, null, null, null, 5.0, null);
    }

    private static boolean granted(Takes.Permit p, OffsetDateTime now) {
        return !p.carried() && p.slot() != null && !p.slot().isAfter(now.toInstant()) && p.requests() == 1.0;
    }

    @Test
    void takesQueuedBehindAStatementShareTheNextOneAKeyOncePerStatement(TestDatabase db) throws Exception {
        buckets(db, 3);
        GateDb gdb = new GateDb(new Db(db.dataSource()), "worker-a");
        Takes takes = new Takes(gdb);
        OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.MILLIS);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try (Connection holder = db.dataSource().getConnection()) {
            holder.setAutoCommit(false);
            try (Statement st = holder.createStatement()) {
                st.execute("select 1 from layover.buckets where provider_key = 'k0' for update");
            }
            Future<Takes.Permit> first = pool.submit(() -> takes.take(take("k0", now))); // in flight, held by the row lock
            Await.equal(Duration.ofSeconds(10), "the first take waiting on the row lock", 1L,
                    () -> db.count("select count(*) from pg_stat_activity where datname = current_database()"
                            + " and wait_event_type = 'Lock' and query like '%layover.buckets%'"));
            List<Future<Takes.Permit>> queued = new ArrayList<>();
            for (String key : List.of("k1", "k1", "k2")) {
                queued.add(pool.submit(() -> takes.take(take(key, now))));
            }
            Await.equal(Duration.ofSeconds(10), "takes queued behind the first", 3, takes::queued);
            assertFalse(first.isDone());
            holder.commit();
            assertEquals(true, granted(first.get(10, TimeUnit.SECONDS), now));
            for (Future<Takes.Permit> f : queued) {
                assertEquals(true, granted(f.get(10, TimeUnit.SECONDS), now));
            }
        } finally {
            pool.shutdownNow();
        }
        // the first alone; then k1 and k2 together; then the second take of k1
        assertEquals(3, gdb.inlineStatements());
        assertEquals(Map.of("k0", 1L, "k1", 2L, "k2", 1L), Map.of(
                "k0", taken(db, "k0", now), "k1", taken(db, "k1", now), "k2", taken(db, "k2", now)));
    }

    @Test
    void everyKeyGivesExactlyItsCapacityWhateverTheGrouping(TestDatabase db) throws Exception {
        int keys = 20;
        int threads = 16;
        buckets(db, keys);
        Takes takes = new Takes(new GateDb(new Db(db.dataSource()), "worker-a"));
        OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.MILLIS);
        Map<String, AtomicInteger> grants = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> all = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int first = t;
                all.add(pool.submit(() -> {
                    for (int j = 0; j < keys; j++) { // every thread asks every key once, each from another key on
                        String key = "k" + (first + j) % keys;
                        if (granted(takes.take(take(key, now)), now)) {
                            grants.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : all) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (int k = 0; k < keys; k++) {
            assertEquals(3, grants.get("k" + k).get(), "permits of k" + k + " (capacity 3, 16 takes)");
            assertEquals(3L, taken(db, "k" + k, now));
        }
    }

    /** Permits the bucket row has given since -infinity at one request a second, the clock at {@code now}. */
    private static long taken(TestDatabase db, String key, OffsetDateTime now) {
        return db.count("select round(extract(epoch from request_tat - ?::timestamptz))::bigint from layover.buckets"
                + " where provider_key = ?", now, key);
    }
}
