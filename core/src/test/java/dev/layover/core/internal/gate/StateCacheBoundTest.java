package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.core.spi.Db;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestClock;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The provider-state cache is bounded by use: its refresh re-reads only keys used within a minute,
 * and it forgets keys unused for ten minutes (after writing their counted successes), telling the
 * rest of the gate to forget them too. The use windows run on a ticker the test moves.
 */
@DatabaseTest
class StateCacheBoundTest {

    private final AtomicLong ticker = new AtomicLong(1_000_000_000L);
    private final TestClock clock = new TestClock(Instant.now().truncatedTo(ChronoUnit.MILLIS));

    private StateCache cache(TestDatabase db) {
        GateDb gdb = new GateDb(new Db(db.dataSource()), "cache-test", false);
        return new StateCache(gdb, clock, new BreakerEvents(List.of(), LayoverMetrics.none(), "cache-test"),
                key -> Duration.ofSeconds(60), false, ticker::get);
    }

    private void advance(Duration d) {
        ticker.addAndGet(d.toNanos());
    }

    @Test
    void theRefreshReadsOnlyKeysInUseAndAnIdleKeyComesBackOnUse(TestDatabase db) {
        StateCache cache = cache(db);
        KeyState busy = cache.keyState("k:busy");
        KeyState idle = cache.keyState("k:idle");
        cache.fresh(busy); // as an admission does: the first read creates the breaker rows
        cache.fresh(idle);
        cache.refreshOnce();
        assertNotNull(idle.snapshot, "both read while in use");
        assertEquals(2L, db.count("select count(*) from layover.breakers where provider_key like 'k:%'"));

        advance(Duration.ofSeconds(61));
        cache.keyState("k:busy");
        db.execute("update layover.breakers set state = 'open', open_until = now() + interval '1 hour' where provider_key like 'k:%'");
        cache.refreshOnce();
        assertEquals(BreakerState.OPEN, busy.snapshot.state(), "a key in use is re-read");
        assertEquals(BreakerState.CLOSED, idle.snapshot.state(), "a key idle for a minute is not re-read");
        assertEquals(2, cache.size(), "idle is not yet forgotten");

        assertSame(idle, cache.keyState("k:idle"), "its next use finds it");
        cache.refreshOnce();
        assertEquals(BreakerState.OPEN, idle.snapshot.state(), "and the refresh reads it again");

        advance(Duration.ofSeconds(30));
        cache.refreshOnce(); // a refresh is not a use: the key's minute runs from its last use
        advance(Duration.ofSeconds(31));
        db.execute("update layover.breakers set state = 'closed', open_until = null where provider_key = 'k:idle'");
        cache.refreshOnce();
        assertEquals(BreakerState.OPEN, idle.snapshot.state(), "61 s after its use, refreshed 31 s ago: no longer re-read");
    }

    @Test
    void theRefreshReadsBackOnlyKeysThatAreNotPlainAndResetsTheRest(TestDatabase db) {
        StateCache cache = cache(db);
        KeyState a = cache.keyState("k:a");
        KeyState b = cache.keyState("k:b");
        cache.fresh(a);
        cache.fresh(b);
        db.execute("update layover.breakers set state = 'open', open_until = now() + interval '1 hour' where provider_key = 'k:a'");
        db.execute("insert into layover.cooldowns (provider_key, until, reason, started_at, updated_at) values ('k:b', now() + interval '1 hour', 'rate_limited', now(), now())");
        cache.refreshOnce();
        assertEquals(BreakerState.OPEN, a.snapshot.state());
        assertNotNull(b.snapshot.cooldownUntil(), "a cooldown in force is read");

        db.execute("update layover.breakers set state = 'closed', open_until = null where provider_key = 'k:a'");
        db.execute("update layover.cooldowns set until = now() - interval '1 second' where provider_key = 'k:b'");
        cache.refreshOnce();
        assertEquals(BreakerState.CLOSED, a.snapshot.state(), "closed again: not marked, so reset to plain");
        assertEquals(null, b.snapshot.cooldownUntil(), "the cooldown over: reset to plain");

        db.execute("delete from layover.breakers where provider_key = 'k:a'");
        cache.refreshOnce();
        assertEquals(BreakerState.CLOSED, a.snapshot.state(), "a missing row is not looked for by the refresh");
        cache.breakerRowMissing(a); // what a failure that could not be counted says
        cache.refreshOnce();
        assertNotNull(cache.fresh(a));
        assertEquals(1L, db.count("select count(*) from layover.breakers where provider_key = 'k:a'"),
                "a breaker row gone missing is created again by the key's next use");

        KeyState unread = cache.keyState("k:unread"); // met (a fair queue's key, say) but never admitted here
        cache.refreshOnce();
        assertEquals(null, unread.snapshot, "the refresh does not take a key never read for a plain one");
        cache.fresh(unread);
        assertEquals(1L, db.count("select count(*) from layover.breakers where provider_key = 'k:unread'"),
                "its first inline read creates its breaker row");
    }

    @Test
    void aKeyUnusedForTenMinutesIsForgottenAfterItsSuccessesAreWritten(TestDatabase db) {
        StateCache cache = cache(db);
        List<String> forgotten = new CopyOnWriteArrayList<>();
        cache.onForget(forgotten::add);
        KeyState old = cache.keyState("k:old");
        cache.fresh(old);
        cache.fresh(cache.keyState("k:new"));
        cache.refreshOnce();
        old.successes.add(3);

        advance(Duration.ofMinutes(9));
        cache.keyState("k:new");
        advance(Duration.ofMinutes(1));
        cache.refreshOnce();
        assertEquals(List.of("k:old"), forgotten);
        assertEquals(1, cache.size());
        assertEquals(3L, db.count("select calls from layover.breakers where provider_key = 'k:old'"),
                "its counted successes were written before it was forgotten");

        KeyState again = cache.keyState("k:old");
        assertNotNull(cache.fresh(again), "met again, it is read like a new key");
        assertEquals(2, cache.size());
    }
}
