package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;

import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.provider.TokenDimension;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.internal.db.NamedSql;
import dev.layover.core.spi.Db;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The token side of a bucket ({@code docs/tokens.md}): a call's reservation in every limited
 * dimension (combined, input, output) is taken with its admission (its job's pick, or {@code
 * layover.take} for a call to another key); after the call, the reservation is replaced by what the
 * call reported, for every bucket it was taken from, in one statement ({@link TokenSql#SETTLE}).
 *
 * <ul>
 *   <li>A reservation larger than a dimension's capacity can never be admitted: the job parks
 *       {@code rejected}.
 *   <li>No usage reported: the reservation stays as the call's cost.
 *   <li>Usage above the reservation: the difference is charged, at most one minute of the
 *       dimension's limit per call ({@code layover.gcra_settle}); the history keeps the full report.
 * </ul>
 */
final class TokenLedger {

    private static final Logger LOG = LoggerFactory.getLogger(TokenLedger.class);

    private static final TokenDimension[] DIMENSIONS = TokenDimension.values();

    /**
     * What one run reserved in one bucket: per token dimension, its rate at the time (tokens/s, 0
     * when not limited), the tokens taken, and the call's whole need (input estimate + ceiling;
     * more than taken when a booking took the key's share of it). Settling applies deltas at these
     * rates and, at the first settle ({@code settled} false), learns the key's share from
     * counted / need.
     */
    record Reservation(String key, double[] rates, long[] tokens, long[] need, boolean settled) {

        /** A reservation that took the whole need. */
        Reservation(String key, double[] rates, long[] need) {
            this(key, rates, need, need, false);
        }

        Reservation(String key, double[] rates, long[] tokens, long[] need) {
            this(key, rates, tokens, need, false);
        }
    }

    private static final NamedSql CONFIGURE = NamedSql.load("bucket_configure");

    private final GateDb gdb;
    private final LayoverMetrics metrics;

    /** @param metrics where tokens are counted ({@code layover.tokens}): never throws (the gate's are guarded) */
    TokenLedger(GateDb gdb, LayoverMetrics metrics) {
        this.gdb = gdb;
        this.metrics = metrics;
    }

    /**
     * Why an estimate can never be admitted by a bucket: the first dimension whose capacity it
     * exceeds, with the numbers; null when it fits every dimension.
     */
    static String tooLarge(String key, BucketSettings b, TokenEstimate e) {
        for (TokenDimension d : DIMENSIONS) {
            double cap = b.capacity(d);
            long need = e.tokensFor(d);
            if (cap > 0 && need > cap) {
                return "the call's token reservation (" + e + ": " + need + " " + name(d) + ") is larger than "
                        + key + "'s bucket can ever admit (" + name(d) + " capacity " + Buckets.trim(Math.floor(cap))
                        + " = " + Buckets.trim(b.perMinute(d)) + "/min x token burst " + b.tokenBurst().toSeconds()
                        + " s); it would wait forever";
            }
        }
        return null;
    }

    /**
     * What an admission reserved for a call, as its run settles it: per dimension the key's rate
     * (tokens/s), what was taken, and the call's whole need.
     *
     * @param key the key
     * @param rates the key's token rates at the admission (combined, input, output)
     * @param reserved what was taken per dimension (the need times the key's share)
     * @param e the call's estimate
     * @return the reservation
     */
    static Reservation reservation(String key, double[] rates, double[] reserved, TokenEstimate e) {
        return new Reservation(key, rates, rounded(reserved), need(rates, e));
    }

    private static double[] rates(BucketSettings b) {
        double[] rates = new double[DIMENSIONS.length];
        for (TokenDimension d : DIMENSIONS) {
            rates[d.ordinal()] = b.rate(d);
        }
        return rates;
    }

    private static long[] need(double[] rates, TokenEstimate e) {
        long[] need = new long[DIMENSIONS.length];
        for (TokenDimension d : DIMENSIONS) {
            need[d.ordinal()] = rates[d.ordinal()] > 0 ? e.tokensFor(d) : 0;
        }
        return need;
    }

    private static long[] rounded(double[] d) {
        long[] t = new long[d.length];
        for (int k = 0; k < t.length; k++) {
            t[k] = Math.round(d[k]);
        }
        return t;
    }

    /**
     * Replaces a run's reservations by what its call reported (given back or charged), in one
     * statement for every bucket they were taken from. Nothing when no usage was reported (the
     * reservation stays the call's cost) or nothing was reserved. Never throws; a database error
     * is logged and the reservations stand.
     *
     * @return the reservations as settled (each now holding what the call counted), or the same
     *     list when nothing was written
     */
    List<Reservation> settle(List<Reservation> reservations, TokenUsage usage, Instant now) {
        for (Reservation r : reservations) {
            count(r.key(), "reserved", combined(r));
        }
        if (usage == null || reservations.isEmpty()) {
            return reservations;
        }
        long[][] counted = new long[reservations.size()][];
        for (int i = 0; i < reservations.size(); i++) {
            long[] c = new long[DIMENSIONS.length];
            for (TokenDimension d : DIMENSIONS) {
                c[d.ordinal()] = usage.tokensFor(d);
            }
            counted[i] = c;
        }
        List<Reservation> settled = apply(reservations, counted, null, true, now, "settling the token reservations");
        for (int i = 0; i < reservations.size(); i++) {
            Reservation r = reservations.get(i);
            long used = usage.totalTokens();
            count(r.key(), "used", used);
            if (settled != reservations) { // written: the difference was given back or charged
                long reserved = combined(r);
                count(r.key(), reserved > used ? "refunded" : "charged", Math.abs(reserved - used));
            }
        }
        return settled;
    }

    /** What a reservation holds as input + output (its largest dimension: combined, else input + output). */
    private static long combined(Reservation r) {
        long[] t = r.tokens();
        return r.rates()[0] > 0 ? t[0] : t[1] + t[2];
    }

    private void count(String key, String kind, long tokens) {
        if (tokens > 0) {
            try {
                metrics.tokens(key, kind, tokens);
            } catch (RuntimeException e) {
                LOG.debug("Layover: token metrics failed: {}", e.toString());
            }
        }
    }

    /**
     * Moves a run's reservations to a refined estimate before its call (the difference given back
     * or charged at once, bounded as a settle is), in one statement.
     *
     * @return the reservations as refined
     */
    List<Reservation> refine(List<Reservation> reservations, TokenEstimate e, Instant now) {
        if (reservations.isEmpty()) {
            return reservations;
        }
        long[][] wanted = new long[reservations.size()][];
        long[][] needs = new long[reservations.size()][];
        for (int i = 0; i < reservations.size(); i++) {
            Reservation r = reservations.get(i);
            long[] w = new long[DIMENSIONS.length];
            long[] nd = new long[DIMENSIONS.length];
            for (TokenDimension d : DIMENSIONS) {
                int k = d.ordinal();
                nd[k] = r.rates()[k] > 0 ? e.tokensFor(d) : 0;
                // a booking that took a share of the old need takes the same share of the new one
                w[k] = r.need()[k] > 0 ? Math.round((double) nd[k] * r.tokens()[k] / r.need()[k]) : nd[k];
            }
            wanted[i] = w;
            needs[i] = nd;
        }
        return apply(reservations, wanted, needs, false, now, "refining the token reservations");
    }

    /**
     * One {@link TokenSql#SETTLE}: each reservation moves to its target; with {@code learn} (a
     * report) the key's shares learn counted (the target) / need.
     *
     * @param newNeeds the needs the reservations hold afterwards, or null for unchanged
     */
    private List<Reservation> apply(List<Reservation> reservations, long[][] target, long[][] newNeeds, boolean learn,
            Instant now, String what) {
        int n = reservations.size();
        String[] keys = new String[n];
        Double[][] cols = new Double[12][n];
        boolean any = false;
        for (int i = 0; i < n; i++) {
            Reservation r = reservations.get(i);
            keys[i] = r.key();
            for (TokenDimension d : DIMENSIONS) {
                int k = d.ordinal();
                double delta = r.rates()[k] > 0 ? target[i][k] - r.tokens()[k] : 0;
                cols[2 * k][i] = r.rates()[k];
                cols[2 * k + 1][i] = delta;
                boolean learns = learn && !r.settled() && r.rates()[k] > 0 && r.need()[k] > 0;
                cols[6 + k][i] = learns ? (double) target[i][k] : null;
                cols[9 + k][i] = learns ? (double) r.need()[k] : null;
                any |= delta != 0 || learns;
            }
        }
        if (!any) {
            return reservations;
        }
        try {
            gdb.inline(what + " of " + String.join(", ", keys), c -> {
                try (PreparedStatement ps = c.prepareStatement(TokenSql.SETTLE)) {
                    ps.setObject(1, gdb.bucketTime(now));
                    ps.setArray(2, c.createArrayOf("text", keys));
                    for (int j = 0; j < cols.length; j++) {
                        ps.setArray(3 + j, c.createArrayOf("float8", cols[j]));
                    }
                    return ps.executeUpdate();
                }
            });
        } catch (RuntimeException ex) {
            LOG.warn("Layover: could not write {} of {}; the reservations stand: {}", what, String.join(", ", keys),
                    ex.getMessage());
            return reservations;
        }
        Reservation[] out = new Reservation[n];
        for (int i = 0; i < n; i++) {
            Reservation r = reservations.get(i);
            out[i] = new Reservation(r.key(), r.rates(), target[i], newNeeds == null ? r.need() : newNeeds[i],
                    r.settled() || learn);
        }
        return List.of(out);
    }

    /**
     * Tightens a key's bucket to the provider's own count of what remains of its token limits
     * ({@link TokenSql#CORRECT}: never loosens), one statement. Never throws; an error is logged.
     *
     * @return whether a statement ran
     */
    boolean correct(String key, RateLimitHeaders h, Instant now) {
        Double[] v = new Double[6];
        boolean any = false;
        for (TokenDimension d : DIMENSIONS) {
            RateLimitHeaders.Window w = h.tokens(d);
            if (w != null && w.remaining() != null) {
                v[2 * d.ordinal()] = w.limit() == null ? null : w.limit().doubleValue();
                v[2 * d.ordinal() + 1] = w.remaining().doubleValue();
                any = true;
            }
        }
        if (!any) {
            return false;
        }
        try {
            gdb.inline("correcting the bucket of " + key + " by the provider's remaining tokens", c -> {
                try (PreparedStatement ps = c.prepareStatement(TokenSql.CORRECT)) {
                    Db.bind(ps, gdb.bucketTime(now), key, v[0], v[1], v[2], v[3], v[4], v[5]);
                    return ps.executeUpdate();
                }
            });
            return true;
        } catch (RuntimeException ex) {
            LOG.warn("Layover: could not correct the bucket of {} by the provider's remaining tokens: {}", key,
                    ex.getMessage());
            return false;
        }
    }

    /** Writes a bucket's limits, every dimension, and its copies when it is a pattern ({@code bucket_configure.sql}). */
    static int configure(Connection c, String key, BucketSettings b, String worker) throws SQLException {
        java.util.Map<String, Object> p = new java.util.HashMap<>();
        p.put("key", key);
        p.put("rpm", positive(b.requestsPerMinute()));
        p.put("tpm", positive(b.tokensPerMinute()));
        p.put("itpm", positive(b.inputTokensPerMinute()));
        p.put("otpm", positive(b.outputTokensPerMinute()));
        p.put("burst_ms", (int) Math.min(Integer.MAX_VALUE, b.burst().toMillis()));
        p.put("token_burst_ms", (int) Math.min(Integer.MAX_VALUE, b.tokenBurst().toMillis()));
        p.put("worker", worker);
        try (PreparedStatement ps = CONFIGURE.prepare(c, p)) {
            return ps.executeUpdate();
        }
    }

    private static Double positive(double d) {
        return d > 0 ? d : null;
    }

    private static String name(TokenDimension d) {
        return switch (d) {
            case TOKENS -> "tokens";
            case INPUT_TOKENS -> "input tokens";
            case OUTPUT_TOKENS -> "output tokens";
        };
    }
}
