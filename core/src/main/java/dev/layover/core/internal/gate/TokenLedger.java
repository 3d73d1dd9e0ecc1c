package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.provider.TokenDimension;
import dev.layover.core.provider.state.BucketSettings;
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
 * The token side of a bucket ({@code docs/tokens.md}): a call's request permit and its token
 * reservation in every limited dimension (combined, input, output) taken in one statement, or
 * nothing ({@link TokenSql#TAKE}); after the call, the reservation replaced by what the call
 * reported, for every bucket it was taken from, in one statement ({@link TokenSql#SETTLE}).
 *
 * <ul>
 *   <li>A reservation larger than a dimension's capacity can never be admitted: {@link Admission.TooLarge}.
 *   <li>No usage reported: the reservation stays as the call's cost.
 *   <li>Usage above the reservation: the difference is charged, at most one minute of the
 *       dimension's limit per call ({@code layover.gcra_settle}); the history keeps the full
 *       report.
 * </ul>
 *
 * <p>No tokens are leased: each call of a bucket with a token dimension costs one statement
 * before and, when it reports usage that differs from its reservation, one after.
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

    private final GateDb gdb;
    private final Duration permitGrace;
    private final LayoverMetrics metrics;

    /** @param metrics where tokens are counted ({@code layover.tokens}): never throws (the gate's are guarded) */
    TokenLedger(GateDb gdb, Duration permitGrace, LayoverMetrics metrics) {
        this.gdb = gdb;
        this.permitGrace = permitGrace;
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

    /** One row of {@link TokenSql#TAKE}: the tokens taken per dimension, the key's shares (null: no row). */
    private record Taken(boolean carried, Instant slot, double[] tokens, double[] shares) {}

    private static double[] scaled(long[] need, double[] shares) {
        double[] out = new double[need.length];
        for (int k = 0; k < need.length; k++) {
            out[k] = need[k] * (shares == null ? 1 : shares[k]);
        }
        return out;
    }

    /**
     * Takes a call's request permit and token reservation from a bucket with a token dimension.
     * When the job holds a permit from its reschedule, that is spent and the bucket left alone
     * (the booking was taken with it). With {@code mayWait}, a call that does not fit now books
     * the first slot at which every dimension admits what the key's calls use of such a need
     * (the key's shares: a booked slot is not spaced by output its predecessors will give back) and
     * waits for it; the booking is settled after the call like a whole reservation.
     *
     * @param configure writes the bucket row when it is missing; null for a learned pace's bucket
     * @return go, wait (with the held permit when {@code mayWait}) or too large; null when a
     *     learned pace's row is missing
     */
    Admission take(KeyState ks, BucketSettings b, TokenEstimate e, Instant now, ProviderRun run, boolean mayWait,
            Runnable configure) {
        String big = tooLarge(ks.key, b, e);
        if (big != null) {
            return new Admission.TooLarge(GateDb.cut(big));
        }
        double[] rates = rates(b);
        long[] need = need(rates, e);
        for (int tries = 0; tries < 2; tries++) {
            Taken row = gdb.inline("taking a permit and tokens from the bucket of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(TokenSql.TAKE)) {
                    Db.bind(ps, ks.key, ts(now),
                            b.requestRate(), b.requestCapacity(), 1.0,
                            rates[0], b.capacity(DIMENSIONS[0]), (double) need[0],
                            rates[1], b.capacity(DIMENSIONS[1]), (double) need[1],
                            rates[2], b.capacity(DIMENSIONS[2]), (double) need[2],
                            mayWait, run == null ? null : run.heldPermitTask(), run == null ? null : run.jobId(),
                            run == null ? null : run.version(), seconds(permitGrace));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return new Taken(rs.getLong("carried") > 0, instant(rs, "last_slot"),
                                new double[] {rs.getDouble("tn"), rs.getDouble("inn"), rs.getDouble("onn")},
                                rs.getObject("ts") == null ? null
                                        : new double[] {rs.getDouble("ts"), rs.getDouble("ins"), rs.getDouble("ons")});
                    }
                }
            });
            if (!row.carried() && row.slot() == null) {
                if (configure == null) {
                    return null; // a learned pace's row, deleted by an operator: the caller forgets it
                }
                configure.run(); // the row is missing (deleted by an operator, or not written yet)
                continue;
            }
            if (row.carried() && run != null) {
                run.permitCarried();
            }
            boolean fitsNow = !row.carried() && !row.slot().isAfter(now);
            boolean taken = row.carried() || mayWait || fitsNow;
            if (taken && run != null) {
                // a held permit's booking took the key's share of the need then; its share now is about that
                run.reserved(new Reservation(ks.key, rates, rounded(row.carried() ? scaled(need, row.shares())
                        : row.tokens()), need));
            }
            if (taken && !row.carried()) {
                count(ks.key, "reserved", Math.round(row.tokens()[0] > 0 ? row.tokens()[0] : row.tokens()[1] + row.tokens()[2]));
            }
            if (row.carried() || fitsNow) {
                return ProviderGate.GO;
            }
            String detail = "no permit of " + ks.key + "'s bucket (" + Buckets.describe(b) + ") for " + e + " before "
                    + row.slot() + (mayWait ? " (booked at the share of its reservation the key's calls use)" : "");
            return new Admission.Wait(row.slot(), "bucket", detail, mayWait ? row.slot() : null);
        }
        throw new IllegalStateException("the bucket row of " + ks.key + " could not be created");
    }

    /**
     * A call admitted by its key's fair queue ({@code layover.fair_round_limit} booked its
     * permit, taking the estimate's need times the key's shares of every token dimension): that
     * booking becomes the run's reservation, settled after the call like a take's.
     *
     * @param shares the key's shares {combined, input, output} as the round read them (null: 1)
     */
    void reserveBooked(String key, BucketSettings b, ProviderRun run, double[] shares) {
        double[] rates = rates(b);
        long[] need = need(rates, run.estimate());
        long[] took = rounded(scaled(need, shares));
        run.reserved(new Reservation(key, rates, took, need));
        count(key, "reserved", took[0] > 0 ? took[0] : took[1] + took[2]);
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
                    ps.setObject(1, ts(now));
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
                    Db.bind(ps, ts(now), key, v[0], v[1], v[2], v[3], v[4], v[5]);
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

    /** Writes a bucket's limits, every dimension ({@link TokenSql#CONFIGURE_BUCKET}). */
    static int configure(Connection c, String key, BucketSettings b, String worker) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(TokenSql.CONFIGURE_BUCKET)) {
            Db.bind(ps, key, positive(b.requestsPerMinute()), positive(b.tokensPerMinute()),
                    positive(b.inputTokensPerMinute()), positive(b.outputTokensPerMinute()),
                    (int) Math.min(Integer.MAX_VALUE, b.burst().toMillis()),
                    (int) Math.min(Integer.MAX_VALUE, b.tokenBurst().toMillis()), worker);
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
