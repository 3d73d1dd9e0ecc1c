package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.spi.Db;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which bucket a key's calls pass: the configured one, else a pace the fleet learned from a 429
 * that stated the key's limit (a row of {@code layover.buckets} with {@code learned_until}), else
 * none. A learned pace is written with {@link StateSql#LEARN_PACE}, which never touches a
 * configured bucket.
 */
final class Paces {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);

    /** A pace renewed less than this long ago is not written again (many workers meet one 429 burst). */
    private static final Duration RENEW_AFTER = Duration.ofSeconds(30);

    private final GateDb gdb;
    private final StateCache cache;
    private final CooldownSettings settings;
    private final Map<String, BucketSettings> configured;

    Paces(GateDb gdb, StateCache cache, CooldownSettings settings, Map<String, BucketSettings> configured) {
        this.gdb = gdb;
        this.cache = cache;
        this.settings = settings;
        this.configured = configured;
    }

    /** @return the bucket the key's calls pass now: configured, else a learned pace in force, else null */
    BucketSettings bucketOf(KeyState ks, Instant now) {
        BucketSettings b = configured.get(ks.key);
        if (b != null) {
            return b;
        }
        KeyState.Learned l = ks.learned;
        return l != null && l.until().isAfter(now) ? l.bucket() : null;
    }

    /** @return whether {@code bucket} (from {@link #bucketOf}) is the key's discovered pace */
    boolean isDiscovered(KeyState ks, BucketSettings bucket) {
        KeyState.Learned l = ks.learned;
        return bucket != null && l != null && l.discovered() && l.bucket() == bucket && !configured.containsKey(ks.key);
    }

    /** @return the pace learned for a key and in force now; null when none, or when the key has a configured bucket */
    BucketSettings learnedBucket(String key) {
        if (configured.containsKey(key)) {
            return null;
        }
        KeyState ks = cache.known(key);
        KeyState.Learned l = ks == null ? null : ks.learned;
        return l != null && l.until().isAfter(cache.now()) ? l.bucket() : null;
    }

    /** A 429 stated the key's limit: learn (or renew) its pace, unless a bucket is configured. */
    void learnFrom(KeyState ks, double limitPerSecond, Duration retryAfter, Instant now) {
        if (settings.learnedPaceFor().isZero() || configured.containsKey(ks.key)) {
            return;
        }
        double rpm = limitPerSecond * 60 * settings.learnedPaceShare();
        KeyState.Learned l = ks.learned;
        if (l != null && !l.discovered() && l.until().isAfter(now) && Math.abs(l.bucket().requestsPerMinute() - rpm) <= rpm * 0.01
                && Duration.between(now, l.until()).compareTo(settings.learnedPaceFor().minus(RENEW_AFTER)) > 0) {
            return;
        }
        Duration wait = retryAfter != null ? retryAfter : settings.rateLimitBase();
        if (wait.compareTo(settings.learnedPaceFor()) > 0) {
            wait = settings.learnedPaceFor(); // a longer wait is the cooldown's business, not the pace's
        }
        learn(ks, rpm, now.plus(settings.learnedPaceFor()), now.plus(wait));
    }

    /**
     * Writes the key's learned pace and keeps what the row holds.
     *
     * @param emptyAt when the provider's bucket is taken to be empty (the end of its wait): no
     *     burst is handed out before then
     */
    private void learn(KeyState ks, double rpm, Instant until, Instant emptyAt) {
        KeyState.Learned before = ks.learned;
        BucketSettings wanted = BucketSettings.requestsPerMinute(rpm);
        KeyState.Learned after = gdb.inline("learning the pace of " + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.LEARN_PACE)) {
                Db.bind(ps, ks.key, rpm, (int) wanted.burst().toMillis(), gdb.workerName, ts(until),
                        ts(emptyAt.plus(wanted.burst())));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? learned(rs.getDouble(1), instant(rs, "learned_until"), before) : null;
                }
            }
        });
        ks.learned = after;
        if (after != null && (before == null || !before.until().isAfter(cache.now())
                || Math.abs(before.bucket().requestsPerMinute() - rpm) > rpm * 0.01)) {
            LOG.info("Pace of {} learned from a 429: {} requests/min until {} (a bucket shared by the fleet)", ks.key,
                    Buckets.trim(Math.round(rpm * 100) / 100.0), after.until());
        }
    }

    /** The learned pace of a row, reusing {@code previous} when it says the same (no new settings object per read). */
    static KeyState.Learned learned(double rpm, Instant until, KeyState.Learned previous) {
        return learned(rpm, until, false, previous);
    }

    /** Like {@link #learned(double, Instant, KeyState.Learned)}, for a stated or a discovered pace. */
    static KeyState.Learned learned(double rpm, Instant until, boolean discovered, KeyState.Learned previous) {
        if (until == null || !(rpm > 0)) {
            return null;
        }
        if (previous != null && previous.discovered() == discovered && previous.bucket().requestsPerMinute() == rpm) {
            return previous.until().equals(until) ? previous : new KeyState.Learned(previous.bucket(), until, discovered);
        }
        return new KeyState.Learned(BucketSettings.requestsPerMinute(rpm), until, discovered);
    }
}
