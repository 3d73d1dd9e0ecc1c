package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.provider.TokenDimension;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.LimitOverride;
import dev.layover.core.spi.Db;
import dev.layover.core.provider.state.CooldownSettings;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import dev.layover.core.internal.keys.KeyPatterns;
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

    Paces(GateDb gdb, StateCache cache, CooldownSettings settings, Map<String, BucketSettings> configured,
            Overrides overrides) {
        this.gdb = gdb;
        this.cache = cache;
        this.settings = settings;
        this.configured = configured;
        this.overrides = overrides;
    }

    private final Overrides overrides;

    /** @return whether the key has a configured bucket, exact or by a {@code prefix*} pattern, or an operator's */
    boolean hasConfigured(String key) {
        if (KeyPatterns.lookup(configured, key) != null) {
            return true;
        }
        LimitOverride o = overrides.of(key);
        return o != null && o.setsBucket();
    }

    /**
     * @return the bucket the key's calls pass now: configured (with an operator's override
     *     applied), else a learned pace in force, else null
     */
    BucketSettings bucketOf(KeyState ks, Instant now) {
        BucketSettings b = overrides.bucket(ks.key, KeyPatterns.lookup(configured, ks.key));
        if (b != null) {
            return b;
        }
        KeyState.Learned l = ks.learned;
        return l != null && l.until().isAfter(now) ? l.bucket() : null;
    }

    /** @return whether {@code bucket} (from {@link #bucketOf}) is the key's discovered pace */
    boolean isDiscovered(KeyState ks, BucketSettings bucket) {
        KeyState.Learned l = ks.learned;
        return bucket != null && l != null && l.discovered() && l.bucket() == bucket && !hasConfigured(ks.key);
    }

    /** @return the pace learned for a key and in force now; null when none, or when the key has a configured bucket */
    BucketSettings learnedBucket(String key) {
        if (hasConfigured(key)) {
            return null;
        }
        KeyState ks = cache.known(key);
        KeyState.Learned l = ks == null ? null : ks.learned;
        return l != null && l.until().isAfter(cache.now()) ? l.bucket() : null;
    }

    /** A 429 stated the key's limit: learn (or renew) its pace, unless a bucket is configured. */
    void learnFrom(KeyState ks, double limitPerSecond, Duration retryAfter, Instant now) {
        if (settings.learnedPaceFor().isZero() || hasConfigured(ks.key)) {
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
                    return rs.next() ? learned(Rates.of(rs), instant(rs, "learned_until"), false, before) : null;
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

    /**
     * The per-minute rates of a learned row (0: the dimension is not limited): requests, and the
     * token limits learned from headers ({@link #learnTokens}).
     */
    record Rates(double requests, double tokens, double inputTokens, double outputTokens) {

        /** Reads {@code requests_per_minute, tokens_per_minute, input_tokens_per_minute, output_tokens_per_minute}. */
        static Rates of(ResultSet rs) throws SQLException {
            return new Rates(rs.getDouble("requests_per_minute"), rs.getDouble("tokens_per_minute"),
                    rs.getDouble("input_tokens_per_minute"), rs.getDouble("output_tokens_per_minute"));
        }

        static Rates requests(double rpm) {
            return new Rates(rpm, 0, 0, 0);
        }

        boolean any() {
            return requests > 0 || tokens > 0 || inputTokens > 0 || outputTokens > 0;
        }

        /** The bucket these rates amount to (default bursts and lease); null when none is limited. */
        BucketSettings bucket() {
            BucketSettings b = requests > 0 ? BucketSettings.requestsPerMinute(requests) : null;
            if (tokens > 0) {
                b = b == null ? BucketSettings.tokensPerMinute(tokens) : b.withTokensPerMinute(tokens);
            }
            if (inputTokens > 0) {
                b = b == null ? BucketSettings.inputTokensPerMinute(inputTokens) : b.withInputTokensPerMinute(inputTokens);
            }
            if (outputTokens > 0) {
                b = b == null ? BucketSettings.outputTokensPerMinute(outputTokens) : b.withOutputTokensPerMinute(outputTokens);
            }
            return b;
        }

        static Rates of(BucketSettings b) {
            return new Rates(b.requestsPerMinute(), b.tokensPerMinute(), b.inputTokensPerMinute(), b.outputTokensPerMinute());
        }
    }

    /** Like {@link #learned(Rates, Instant, boolean, KeyState.Learned)} for a row with a request pace only. */
    static KeyState.Learned learned(double rpm, Instant until, boolean discovered, KeyState.Learned previous) {
        return learned(Rates.requests(rpm), until, discovered, previous);
    }

    /**
     * The learned pace of a row, for a stated or a discovered pace, reusing {@code previous} when
     * it says the same (no new settings object per read); null when the row limits nothing.
     */
    static KeyState.Learned learned(Rates rates, Instant until, boolean discovered, KeyState.Learned previous) {
        if (until == null || !rates.any()) {
            return null;
        }
        if (previous != null && previous.discovered() == discovered && Rates.of(previous.bucket()).equals(rates)) {
            return previous.until().equals(until) ? previous : new KeyState.Learned(previous.bucket(), until, discovered);
        }
        return new KeyState.Learned(rates.bucket(), until, discovered);
    }

    /**
     * A response's rate-limit headers stated the key's token limits (OpenAI's
     * {@code x-ratelimit-limit-tokens}, Anthropic's {@code anthropic-ratelimit-*-limit}): unless
     * the key has a configured bucket, the fleet learns (or renews) them as a token pace, each
     * dimension at {@link CooldownSettings#learnedPaceShare()} of the stated limit, for
     * {@link CooldownSettings#learnedPaceFor()} ({@link StateSql#LEARN_TOKEN_PACE}, one
     * statement). Nothing is written while the pace in force says the same (within 1 %) and was
     * renewed less than 30 s ago, so a key's answers cost no write each.
     *
     * @return whether a statement ran
     */
    boolean learnTokens(KeyState ks, RateLimitHeaders h, Instant now) {
        if (settings.learnedPaceFor().isZero() || hasConfigured(ks.key)) {
            return false;
        }
        double share = settings.learnedPaceShare();
        Double[] stated = new Double[3];
        boolean any = false;
        for (TokenDimension d : TokenDimension.values()) {
            RateLimitHeaders.Window w = h.tokens(d);
            if (w != null && w.limit() != null && w.limit() > 0) {
                stated[d.ordinal()] = w.limit() * share;
                any = true;
            }
        }
        if (!any) {
            return false;
        }
        KeyState.Learned l = ks.learned;
        if (l != null && l.until().isAfter(now)
                && Duration.between(now, l.until()).compareTo(settings.learnedPaceFor().minus(RENEW_AFTER)) > 0) {
            BucketSettings b = l.bucket();
            boolean same = true;
            for (TokenDimension d : TokenDimension.values()) {
                Double want = stated[d.ordinal()];
                same &= want == null || Math.abs(b.perMinute(d) - want) <= want * 0.01;
            }
            if (same) {
                return false;
            }
        }
        KeyState.Learned before = l;
        BucketSettings shape = BucketSettings.tokensPerMinute(1);
        Instant until = now.plus(settings.learnedPaceFor());
        try {
            KeyState.Learned after = gdb.inline("learning the token limits of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.LEARN_TOKEN_PACE)) {
                    Db.bind(ps, ks.key, stated[0], stated[1], stated[2], (int) shape.burst().toMillis(),
                            (int) shape.tokenBurst().toMillis(), gdb.workerName, ts(until));
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? learned(Rates.of(rs), instant(rs, "learned_until"), rs.getBoolean("discovered"),
                                before) : null;
                    }
                }
            });
            if (after != null) {
                ks.learned = after;
                if (before == null || !Rates.of(before.bucket()).equals(Rates.of(after.bucket()))) {
                    LOG.info("Token limits of {} learned from its rate-limit headers: {} until {} (a bucket shared by the fleet)",
                            ks.key, Buckets.describe(after.bucket()), after.until());
                }
            }
            return true;
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not learn the token limits of {} from its headers: {}", ks.key, e.getMessage());
            return false;
        }
    }
}
