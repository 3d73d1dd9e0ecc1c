package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.gate.GateDb.seconds;
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
 *       dimension's limit per call (V17's {@code layover.gcra_settle}); the history keeps the full
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
     * when not limited) and the tokens reserved. Settling applies deltas at these rates.
     */
    record Reservation(String key, double[] rates, long[] tokens) {

        Reservation withTokens(long[] t) {
            return new Reservation(key, rates, t);
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

    /**
     * Takes a call's request permit and token reservation from a bucket with a token dimension.
     * When the job holds a permit from its reschedule, that is spent and the bucket left alone
     * (the reservation was taken with it). With {@code mayWait}, a call that does not fit now
     * reserves the first slot at which every dimension admits it and waits for it.
     *
     * @param configure writes the bucket row when it is missing
     * @return go, wait (with the held permit when {@code mayWait}) or too large
     */
    Admission take(KeyState ks, BucketSettings b, TokenEstimate e, Instant now, ProviderRun run, boolean mayWait,
            Runnable configure) {
        String big = tooLarge(ks.key, b, e);
        if (big != null) {
            return new Admission.TooLarge(GateDb.cut(big));
        }
        double[] rates = new double[DIMENSIONS.length];
        long[] need = new long[DIMENSIONS.length];
        for (TokenDimension d : DIMENSIONS) {
            rates[d.ordinal()] = b.rate(d);
            need[d.ordinal()] = rates[d.ordinal()] > 0 ? e.tokensFor(d) : 0;
        }
        for (int tries = 0; tries < 2; tries++) {
            Object[] row = gdb.inline("taking a permit and tokens from the bucket of " + ks.key, c -> {
                try (PreparedStatement ps = c.prepareStatement(TokenSql.TAKE)) {
                    Db.bind(ps, ks.key, ts(now),
                            b.requestRate(), b.requestCapacity(), 1.0,
                            rates[0], b.capacity(DIMENSIONS[0]), (double) need[0],
                            rates[1], b.capacity(DIMENSIONS[1]), (double) need[1],
                            rates[2], b.capacity(DIMENSIONS[2]), (double) need[2],
                            mayWait, run == null ? null : run.taskName(), run == null ? null : run.jobId(),
                            run == null ? null : run.version(), seconds(permitGrace));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return new Object[] {rs.getLong("carried") > 0, instant(rs, "last_slot")};
                    }
                }
            });
            boolean carried = (Boolean) row[0];
            Instant slot = (Instant) row[1];
            if (!carried && slot == null) {
                configure.run(); // the row is missing (deleted by an operator, or not written yet)
                continue;
            }
            boolean taken = carried || mayWait || !slot.isAfter(now);
            if (taken && run != null) {
                run.reserved(new Reservation(ks.key, rates, need));
            }
            if (taken && !carried) {
                count(ks.key, "reserved", e.totalTokens());
            }
            if (carried || !slot.isAfter(now)) {
                return ProviderGate.GO;
            }
            String detail = "no permit of " + ks.key + "'s bucket (" + Buckets.describe(b) + ") for " + e + " before " + slot;
            return new Admission.Wait(slot, "bucket", detail, mayWait ? slot : null);
        }
        throw new IllegalStateException("the bucket row of " + ks.key + " could not be created");
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
        List<Reservation> settled = apply(reservations, counted, now, "settling the token reservations");
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
        for (int i = 0; i < reservations.size(); i++) {
            Reservation r = reservations.get(i);
            long[] w = new long[DIMENSIONS.length];
            for (TokenDimension d : DIMENSIONS) {
                w[d.ordinal()] = r.rates()[d.ordinal()] > 0 ? e.tokensFor(d) : 0;
            }
            wanted[i] = w;
        }
        return apply(reservations, wanted, now, "refining the token reservations");
    }

    private List<Reservation> apply(List<Reservation> reservations, long[][] target, Instant now, String what) {
        int n = reservations.size();
        String[] keys = new String[n];
        Double[][] cols = new Double[6][n];
        boolean any = false;
        for (int i = 0; i < n; i++) {
            Reservation r = reservations.get(i);
            keys[i] = r.key();
            for (TokenDimension d : DIMENSIONS) {
                int k = d.ordinal();
                double delta = r.rates()[k] > 0 ? target[i][k] - r.tokens()[k] : 0;
                cols[2 * k][i] = r.rates()[k];
                cols[2 * k + 1][i] = delta;
                any |= delta != 0;
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
                    for (int j = 0; j < 6; j++) {
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
            out[i] = reservations.get(i).withTokens(target[i]);
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
