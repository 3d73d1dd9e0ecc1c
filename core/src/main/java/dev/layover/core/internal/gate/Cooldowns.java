package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.cut;
import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.spi.Db;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.CooldownSettings;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet-wide cooldowns ({@code layover.cooldowns}): what an outcome's
 * {@link Outcome.CooldownEffect} asks of its key, written as one forward-only upsert
 * ({@link StateSql#COOLDOWN}: {@code until} never moves back). A cooldown answers the provider's
 * signal: a 429 or a quota always; an overload with a stated wait as stated; an overload without
 * one only when the key's recent calls show a rate of failures ({@link #OVERLOAD_SIGNAL_FAILURES},
 * {@link #OVERLOAD_SIGNAL_SHARE} of its breaker window). Strikes escalate back-to-back cooldowns and
 * reset at the first success after one ended.
 */
final class Cooldowns {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);

    /**
     * An overload that stated no wait pauses the key fleet-wide only when its breaker window holds at
     * least this many failures (overloads and transient errors), this one included...
     */
    static final int OVERLOAD_SIGNAL_FAILURES = 3;
    /** ...making at least this share of the window's calls. */
    static final double OVERLOAD_SIGNAL_SHARE = 0.2;

    private final GateDb gdb;
    private final StateCache cache;
    private final CooldownSettings settings;
    private final Function<String, Duration> window;
    /** Per key, the end of the newest cooldown this instance wrote: one log line per cooldown that starts. */
    private final ConcurrentHashMap<String, Instant> written = new ConcurrentHashMap<>();

    /** @param window each key's breaker counting window, where the rate of failures is read */
    Cooldowns(GateDb gdb, StateCache cache, CooldownSettings settings, Function<String, Duration> window) {
        this.gdb = gdb;
        this.cache = cache;
        this.settings = settings;
        this.window = window;
    }

    /** Drops what this instance keeps of a key the cache forgot. */
    void forget(String key) {
        written.remove(key);
    }

    /** @return the key's cooldown end after this outcome, when the outcome set one; else null */
    Instant after(String key, Outcome o, Instant now) {
        CooldownSettings cs = settings;
        return switch (o.kind().cooldown()) {
            case RATE_LIMIT -> {
                Outcome.RateLimited r = (Outcome.RateLimited) o;
                yield write(key, now, null, r.retryAfter(), cs.rateLimitBase(), cs.rateLimitCap(), "rate_limited",
                        r.reason(), false);
            }
            case UNTIL_RESET -> {
                Outcome.QuotaExhausted q = (Outcome.QuotaExhausted) o;
                yield q.resetAt() == null ? null : write(key, now, q.resetAt(), null, cs.rateLimitBase(),
                        cs.rateLimitCap(), "quota_exhausted", q.reason(), false);
            }
            case OVERLOAD -> {
                // a stated wait is the provider's own signal: honoured as stated (up to the cap); without one, a
                // fleet-wide pause only when the key's recent calls show a rate of failures, not for one stray 503
                Outcome.Overloaded ov = (Outcome.Overloaded) o;
                Duration wait = ov.retryAfter() == null ? null
                        : ov.retryAfter().compareTo(cs.overloadCap()) > 0 ? cs.overloadCap() : ov.retryAfter();
                yield write(key, now, null, wait, cs.overloadBase(), cs.overloadCap(), "overloaded", ov.reason(),
                        wait == null);
            }
            case NONE -> null;
        };
    }

    private Instant write(String key, Instant now, Instant untilAbs, Duration wait, Duration base, Duration cap,
            String reason, String detail, boolean gated) {
        KeyState ks = cache.keyState(key);
        Snapshot before = ks.snapshot;
        Instant until = gdb.inline("writing the cooldown of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.COOLDOWN)) {
                Db.bind(ps, key, ts(now), untilAbs == null ? null : ts(untilAbs), wait == null ? null : seconds(wait),
                        seconds(base), seconds(cap), seconds(settings.strikeMemory()), reason, cut(detail),
                        gdb.workerName, gdb.origin, gated ? OVERLOAD_SIGNAL_FAILURES : 0, OVERLOAD_SIGNAL_SHARE,
                        seconds(window.apply(key)), (int) Math.min(Integer.MAX_VALUE, ks.successes.sum()));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? instant(rs, "until") : null;
                }
            }
        });
        if (until == null) {
            return null; // an overload among successes: this job backs off, the fleet goes on
        }
        cache.update(ks, s -> s.withCooldown(until, reason, cut(detail)));
        log(key, before, now, until, reason, detail);
        return until;
    }

    /**
     * One INFO line when a cooldown starts (the key was callable before this write, as far as
     * this instance knew); a cooldown pushed further while it runs is logged at DEBUG.
     */
    private void log(String key, Snapshot before, Instant now, Instant until, String reason, String detail) {
        if (until == null) {
            return;
        }
        boolean[] starts = {false};
        written.compute(key, (k, last) -> {
            boolean wasCooling = (last != null && last.isAfter(now))
                    || (before != null && before.cooldownUntil() != null && before.cooldownUntil().isAfter(now));
            starts[0] = !wasCooling && until.isAfter(now);
            return last == null || until.isAfter(last) ? until : last;
        });
        if (starts[0]) {
            LOG.info("Cooldown of {}: no call until {} ({} ms; {}{})", key, until, Duration.between(now, until).toMillis(),
                    reason, detail == null ? "" : ": " + cut(detail));
        } else if (LOG.isDebugEnabled()) {
            LOG.debug("Cooldown of {} until {} ({})", key, until, reason);
        }
    }

    /** @return the key's cooldown end as stored (not the cache), possibly past; null when it never cooled down */
    Instant read(String key) {
        return gdb.inline("reading the cooldown of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.COOLDOWN_UNTIL)) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? instant(rs, "until") : null;
                }
            }
        });
    }
}
