package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.cut;
import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.spi.Db;
import dev.layover.core.internal.time.Backoff;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BreakerState;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The circuit breakers: closed → open → half-open, per provider key, shared by the fleet
 * ({@code layover.breakers}). Every transition is one conditional {@code UPDATE} of
 * {@link StateSql}; exactly one trial call across the fleet in half-open, claimed with one.
 * Successes are counted in memory and flushed by the {@link StateCache}'s refresh.
 */
final class Breakers {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);
    private static final Duration HALF_OPEN_MIN_WAIT = Duration.ofSeconds(1);
    private static final Duration HALF_OPEN_MAX_WAIT = Duration.ofSeconds(10);

    private final GateDb gdb;
    private final StateCache cache;
    private final BreakerEvents events;
    private final BreakerSettings defaults;
    private final Map<String, BreakerSettings> perKey;

    Breakers(GateDb gdb, StateCache cache, BreakerEvents events, BreakerSettings defaults,
            Map<String, BreakerSettings> perKey) {
        this.gdb = gdb;
        this.cache = cache;
        this.events = events;
        this.defaults = defaults;
        this.perKey = perKey;
    }

    BreakerSettings settings(String key) {
        return perKey.getOrDefault(key, defaults);
    }

    /** Claims the one trial call of an open breaker whose period is over (or of a stale claim). */
    Admission claimTrial(KeyState ks, Instant now) {
        BreakerSettings bs = settings(ks.key);
        String token = gdb.workerName + ":" + UUID.randomUUID();
        BreakerState from = gdb.inline("claiming the breaker trial of " + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.CLAIM_TRIAL)) {
                Db.bind(ps, ks.key, ts(now), token, seconds(bs.trialTimeout()), gdb.workerName, gdb.origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        if (from == null) {
            // another worker holds the trial (or the breaker moved on); the refresh will tell
            cache.wakeUp();
            return halfOpenWait(ks.key, now, now);
        }
        cache.update(ks, s -> s.withBreaker(BreakerState.HALF_OPEN, s.openUntil(), true, now, now.plus(bs.trialTimeout()),
                "trial claimed by " + gdb.workerName));
        if (from != BreakerState.HALF_OPEN) {
            events.emit(ks.key, from, BreakerState.HALF_OPEN, "open period over; trial call claimed by " + gdb.workerName,
                    now, gdb.workerName, true);
        }
        return new Admission.Go(token);
    }

    /** Another worker holds the half-open breaker's trial: ask again after about as long as it has held it. */
    static Admission halfOpenWait(String key, Instant claimedAt, Instant now) {
        Duration age = claimedAt == null ? Duration.ZERO : Duration.between(claimedAt, now);
        Duration d = age.compareTo(HALF_OPEN_MIN_WAIT) < 0 ? HALF_OPEN_MIN_WAIT
                : age.compareTo(HALF_OPEN_MAX_WAIT) > 0 ? HALF_OPEN_MAX_WAIT : age;
        return new Admission.Wait(now.plus(d).plus(Backoff.rescheduleJitter(d)), "breaker_half_open",
                "the breaker of " + key + " is half-open and another worker holds its one trial call");
    }

    /** A call succeeded: counted (flushed later), or, as the trial, the breaker closed. */
    void success(KeyState ks, String trialToken, Instant now) {
        if (trialToken == null) {
            cache.keyState(ks.key).successes.increment(); // the live state, should the cache have forgotten ks
            return;
        }
        BreakerState from = gdb.inline("closing the breaker of " + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.TRIAL_SUCCEEDED)) {
                Db.bind(ps, ks.key, ts(now), trialToken, gdb.workerName, gdb.origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        if (from == null) {
            cache.keyState(ks.key).successes.increment(); // the live state, should the cache have forgotten ks
            return;
        }
        cache.update(ks, s -> s.withBreaker(BreakerState.CLOSED, null, false, null, null, "trial call succeeded"));
        events.emit(ks.key, from, BreakerState.CLOSED, "trial call succeeded", now, gdb.workerName, true);
    }

    /** A call failed: counted toward opening the breaker, or, as the trial, the breaker reopened. */
    void failure(KeyState ks, String trialToken, String failure, Instant now) {
        BreakerSettings bs = settings(ks.key);
        if (trialToken != null) {
            Object[] row = gdb.inline("reopening the breaker of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.TRIAL_FAILED)) {
                    Db.bind(ps, ks.key, ts(now), trialToken, seconds(bs.openFor()), seconds(bs.maxOpenFor()),
                            cut(failure), gdb.workerName, gdb.origin);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? new Object[] {BreakerState.fromCode(rs.getString(1)), instant(rs, "open_until")} : null;
                    }
                }
            });
            if (row != null) {
                Instant until = (Instant) row[1];
                String reason = "trial call failed: " + failure;
                cache.update(ks, s -> s.withBreaker(BreakerState.OPEN, until, false, null, null, reason));
                events.emit(ks.key, (BreakerState) row[0], BreakerState.OPEN, reason, now, gdb.workerName, true);
            }
            return;
        }
        Snapshot s = ks.snapshot;
        if (s != null && s.state() != BreakerState.CLOSED) {
            return; // a call that was in flight when the breaker opened: it proves nothing new
        }
        long ok = ks.successes.sumThenReset();
        Object[] row;
        try {
            row = gdb.inline("counting a failure of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.ADD_FAILURE)) {
                    Db.bind(ps, ks.key, ts(now), (int) Math.min(Integer.MAX_VALUE, ok), seconds(bs.window()),
                            bs.minimumCalls(), bs.failureThreshold(), bs.failureRatio(), seconds(bs.openFor()),
                            seconds(bs.maxOpenFor()), cut(failure), gdb.workerName, gdb.origin, bs.consecutiveFailures());
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? new Object[] {rs.getString(1), instant(rs, "open_until"), rs.getString(3)} : null;
                    }
                }
            });
        } catch (RuntimeException e) {
            ks.successes.add(ok);
            throw e;
        }
        if (row == null) { // no breaker row to count on: the key's next use creates it
            cache.breakerRowMissing(ks);
            return;
        }
        if ("open".equals(row[0])) {
            Instant until = (Instant) row[1];
            String reason = (String) row[2];
            cache.update(ks, x -> x.withBreaker(BreakerState.OPEN, until, false, null, null, reason));
            events.emit(ks.key, BreakerState.CLOSED, BreakerState.OPEN, reason, now, gdb.workerName, true);
        }
    }

    /** The trial said nothing of the provider's health: the claim goes back for the next worker. */
    void releaseTrial(String key, String token) {
        gdb.inline("releasing the breaker trial of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.RELEASE_TRIAL)) {
                Db.bind(ps, key, token);
                return ps.executeUpdate();
            }
        });
        cache.update(cache.keyState(key), s -> s.state() == BreakerState.HALF_OPEN
                ? s.withBreaker(BreakerState.HALF_OPEN, s.openUntil(), false, null, null, s.breakerReason()) : s);
    }

    void releaseTrialQuietly(String key, String token) {
        try {
            releaseTrial(key, token);
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not give back the breaker trial of {} (it expires by itself): {}", key, e.getMessage());
        }
    }

    boolean forceOpen(String key, Duration holdFor, String reason, String by) {
        Instant now = cache.now();
        cache.ensureBreakers(List.of(key), false);
        Instant until = holdFor == null ? null : now.plus(holdFor);
        String why = "forced open" + (reason == null || reason.isBlank() ? "" : ": " + reason);
        BreakerState from = gdb.inline("forcing open the breaker of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.FORCE_OPEN)) {
                Db.bind(ps, key, ts(now), until == null ? null : ts(until), cut(why), by, gdb.origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        cache.update(cache.keyState(key),
                s -> s.withBreaker(BreakerState.OPEN, until == null ? Instant.MAX : until, false, null, null, why));
        if (from != null && from != BreakerState.OPEN) {
            events.emit(key, from, BreakerState.OPEN, why, now, by, true);
            return true;
        }
        return false;
    }

    boolean forceClose(String key, String reason, String by) {
        Instant now = cache.now();
        String why = "forced closed" + (reason == null || reason.isBlank() ? "" : ": " + reason);
        BreakerState from = gdb.inline("forcing closed the breaker of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.FORCE_CLOSE)) {
                Db.bind(ps, key, ts(now), cut(why), by, gdb.origin);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : null;
                }
            }
        });
        if (from == null) {
            return false;
        }
        cache.update(cache.keyState(key), s -> s.withBreaker(BreakerState.CLOSED, null, false, null, null, why));
        events.emit(key, from, BreakerState.CLOSED, why, now, by, true);
        return true;
    }

    BreakerState read(String key) {
        return gdb.inline("reading the breaker of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.BREAKER_STATE)) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? BreakerState.fromCode(rs.getString(1)) : BreakerState.CLOSED;
                }
            }
        });
    }
}
