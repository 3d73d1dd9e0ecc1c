package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.DiscoverySettings;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import dev.layover.core.internal.jobs.JobStore;
import java.util.ArrayList;
import java.util.List;
import dev.layover.core.internal.keys.KeyPatterns;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Discovered paces: the request rate of a key whose 429s state no limit, found by the fleet from
 * its own successes and 429s (CUBIC's curve, multiplicative decrease, slow start; see
 * {@link DiscoverySettings}) and kept as a row of {@code layover.buckets} with {@code discovered}
 * Every change is one conditional {@code UPDATE} of {@link StateSql} on the database's
 * clock; this instance tries an increase at most once per interval and key, a decrease at most
 * once per burst and key, so successes cost no write.
 */
final class Discovery {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);

    private final GateDb gdb;
    private final DiscoverySettings settings;
    private final Map<String, BucketSettings> configured;
    private final Buckets buckets;
    /** Per key, {@link System#nanoTime()} of this instance's last try of each kind. */
    private final ConcurrentHashMap<String, Long> increaseTried = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Long> decreaseTried = new ConcurrentHashMap<>();

    Discovery(GateDb gdb, DiscoverySettings settings, Map<String, BucketSettings> configured, Buckets buckets) {
        this.gdb = gdb;
        this.settings = settings;
        this.configured = configured;
        this.buckets = buckets;
    }

    /** Drops what this instance keeps of a key the cache forgot. */
    void forget(String key) {
        increaseTried.remove(key);
        decreaseTried.remove(key);
    }

    /** @return whether the key's calls pass a discovered pace now (as this instance knows) */
    static boolean inForce(KeyState ks, Instant now) {
        KeyState.Learned l = ks.learned;
        return l != null && l.discovered() && l.until().isAfter(now);
    }

    /**
     * A 429 that stated no limit: starts the key's discovered pace (no pace in force) or decreases
     * it (once per burst). Nothing for a key with a configured bucket or a stated pace in force.
     *
     * @param retryAfter the wait the 429 asked for, or null
     * @return the cooldown to write instead of the escalating default (the pause), or null to
     *     write the usual one
     */
    Duration after429(KeyState ks, Duration retryAfter, Instant now) {
        if (!settings.enabled() || KeyPatterns.lookup(configured, ks.key) != null) {
            return null;
        }
        KeyState.Learned l = ks.learned;
        if (l != null && !l.discovered() && l.until().isAfter(now)) {
            return null; // a stated pace is in force: it knows better
        }
        Duration wait = retryAfter != null ? retryAfter : settings.pause();
        BucketSettings shape = BucketSettings.requestsPerSecond(settings.initialPerSecond());
        Instant emptyAt = now.plus(wait).plus(shape.burst());
        if (!inForce(ks, now)) {
            Double rpm = write(ks, "starting the discovered pace of ", StateSql.DISCOVERY_START, ks.key,
                    settings.initialPerSecond() * 60, (int) shape.burst().toMillis(), gdb.workerName,
                    seconds(settings.keepFor()), ts(emptyAt));
            if (rpm != null) {
                decreaseTried.put(ks.key, System.nanoTime());
                LOG.info("Pace of {} discovered: its 429s state no limit; slow start from {} requests/s, doubling every {} ms "
                        + "(a bucket shared by the fleet)", ks.key, perSecond(rpm), settings.every().toMillis());
                return retryAfter == null ? settings.pause() : null;
            }
            read(ks); // another instance started it (this 429 is of the same burst), or wrote a stated pace
            if (!inForce(ks, now)) {
                return null;
            }
        }
        double before = ks.learned.bucket().requestsPerMinute();
        if (!tryOnce(decreaseTried, ks.key)) {
            return pauseUnlessFloor(ks, retryAfter);
        }
        Double rpm = write(ks, "decreasing the discovered pace of ", StateSql.DISCOVERY_DECREASE, ks.key,
                settings.decrease(), settings.minPerSecond() * 60, seconds(settings.every()), seconds(settings.keepFor()),
                ts(emptyAt));
        if (rpm != null) {
            LOG.info("Discovered pace of {} decreased after a 429 burst: {} → {} requests/s", ks.key, perSecond(before),
                    perSecond(rpm));
        }
        return pauseUnlessFloor(ks, retryAfter);
    }

    /** The pause, while the pace can still decrease; at the floor the cooldown escalates as without discovery. */
    private Duration pauseUnlessFloor(KeyState ks, Duration retryAfter) {
        KeyState.Learned l = ks.learned;
        if (retryAfter != null || l == null || !l.discovered()) {
            return null;
        }
        return l.bucket().requestsPerMinute() <= settings.minPerSecond() * 60 * 1.0001 ? null : settings.pause();
    }

    /** A successful call: the pace may grow (one try per interval per instance; one change per interval fleet-wide). */
    void afterSuccess(KeyState ks, Instant now) {
        if (!inForce(ks, now) || !tryOnce(increaseTried, ks.key)) {
            return;
        }
        double before = ks.learned.bucket().requestsPerMinute();
        Double rpm = write(ks, "increasing the discovered pace of ", StateSql.DISCOVERY_INCREASE, ks.key, ts(now),
                seconds(settings.every()), seconds(settings.recovery()), settings.decrease(), seconds(settings.keepFor()));
        if (rpm != null && LOG.isDebugEnabled()) {
            LOG.debug("Discovered pace of {} increased: {} → {} requests/s", ks.key, perSecond(before), perSecond(rpm));
        }
    }

    /** A cooldown until {@code until} was written: a long one restarts slow start. */
    void afterCooldown(KeyState ks, Instant until, Instant now) {
        if (until == null || !inForce(ks, now) || Duration.between(now, until).compareTo(settings.restartAfter()) < 0) {
            return;
        }
        double before = ks.learned.bucket().requestsPerMinute();
        Double rpm = write(ks, "restarting the discovered pace of ", StateSql.DISCOVERY_RESTART, ks.key,
                settings.initialPerSecond() * 60, seconds(settings.every()));
        if (rpm != null) {
            LOG.info("Discovered pace of {}: slow start again after a cooldown until {}: {} → {} requests/s, back up to "
                    + "the rate before", ks.key, until, perSecond(before), perSecond(rpm));
        }
    }

    /** Runs one of the discovery statements; keeps the row's pace in the key's state. @return the new rate, or null (no change) */
    private Double write(KeyState ks, String what, String sql, Object... params) {
        KeyState.Learned before = ks.learned;
        return gdb.inline(what + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                Db.bind(ps, params);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return null;
                    }
                    double rpm = rs.getDouble("requests_per_minute");
                    ks.learned = Paces.learned(rpm, instant(rs, "learned_until"), true, before);
                    return rpm;
                }
            }
        });
    }

    /** Reads the key's pace in force (stated or discovered) into its state. */
    private void read(KeyState ks) {
        KeyState.Learned before = ks.learned;
        ks.learned = gdb.inline("reading the pace of " + ks.key, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.PACE_IN_FORCE)) {
                ps.setString(1, ks.key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Paces.learned(rs.getDouble("requests_per_minute"), instant(rs, "learned_until"),
                            rs.getBoolean("discovered"), before) : null;
                }
            }
        });
    }

    /** @return true at most once per interval per key (this instance's tries) */
    private boolean tryOnce(ConcurrentHashMap<String, Long> tried, String key) {
        return tryOnce(tried, key, settings.every());
    }

    private static boolean tryOnce(ConcurrentHashMap<String, Long> tried, String key, Duration every) {
        long t = System.nanoTime();
        boolean[] mine = {false};
        tried.compute(key, (k, last) -> {
            if (last != null && t - last < every.toNanos()) {
                return last;
            }
            mine[0] = true;
            return t;
        });
        return mine[0];
    }

    private static String perSecond(double rpm) {
        return Buckets.trim(Math.round(rpm / 60 * 100) / 100.0);
    }
}
