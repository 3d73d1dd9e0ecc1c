package dev.layover.core.internal.gate;

import dev.layover.core.internal.db.NamedSql;
import dev.layover.core.provider.TokenDimension;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.InteractiveSettings;
import dev.layover.core.tokens.TokenEstimate;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Rate buckets ({@code layover.buckets}, GCRA): the configured rows, and the one take of a call its
 * job's pick did not admit ({@code layover.take}: its request permit and token need, whole or not at
 * all). A job's own key is admitted by its pick, never here; nothing is leased or booked ahead.
 */
final class Buckets {

    private static final NamedSql TAKE = NamedSql.load("bucket_take");

    private final GateDb gdb;
    private final TokenLedger ledger;
    private volatile InteractiveSettings interactive = InteractiveSettings.defaults();

    Buckets(GateDb gdb, TokenLedger ledger) {
        this.gdb = gdb;
        this.ledger = ledger;
    }

    /** How background takes leave a share for interactive calls (the pick's options carry the same). */
    void interactive(InteractiveSettings s) {
        this.interactive = s;
    }

    /** @return the token side of the buckets */
    TokenLedger ledger() {
        return ledger;
    }

    /**
     * Writes a bucket's limits as configured by this worker, every dimension ({@link
     * TokenSql#CONFIGURE_BUCKET}); a {@code prefix*} pattern's row is copied to each key matching it
     * when a pick or a take first meets the key, and its copies follow a change of the pattern.
     */
    void configure(String key, BucketSettings b) {
        gdb.inline("configuring the bucket of " + key, c -> TokenLedger.configure(c, key, b, gdb.workerName));
    }

    /**
     * Takes one call's permit and token need from a key's bucket, or nothing.
     *
     * @param key the key
     * @param b its bucket as this instance knows it (for the message), or null when it knows none
     * @param e the call's estimate
     * @param now the time
     * @param run the run whose reservation the need becomes (settled after the call), or null
     * @param interactive an interactive call's take (not limited by the share background leaves it;
     *     stamps the row's {@code interactive_at}), else a background one
     * @return go, or wait until the call would fit
     */
    Admission take(String key, BucketSettings b, TokenEstimate e, Instant now, ProviderRun run, boolean interactive) {
        InteractiveSettings is = this.interactive;
        Double[] need = new Double[TokenDimension.values().length];
        for (TokenDimension d : TokenDimension.values()) {
            need[d.ordinal()] = (double) e.tokensFor(d);
        }
        Object[] row = gdb.inline("taking a permit from the bucket of " + key, c -> {
            Map<String, Object> p = new HashMap<>();
            p.put("key", key);
            p.put("now", gdb.bucketTime(now));
            p.put("need", c.createArrayOf("float8", need));
            p.put("interactive", interactive);
            p.put("reserve", is.share());
            p.put("window", is.windowSeconds());
            try (PreparedStatement ps = TAKE.prepare(c, p); ResultSet rs = ps.executeQuery()) {
                rs.next();
                OffsetDateTime fits = rs.getObject("fits_at", OffsetDateTime.class);
                return new Object[] {rs.getBoolean("taken"), fits == null ? now : fits.toInstant(),
                        doubles(rs.getArray("reserved")), doubles(rs.getArray("rates"))};
            }
        });
        if (Boolean.TRUE.equals(row[0])) {
            if (run != null && row[2] != null) {
                run.reserved(TokenLedger.reservation(key, (double[]) row[3], (double[]) row[2], e));
            }
            return ProviderGate.GO;
        }
        return new Admission.Wait((Instant) row[1], "bucket", GateDb.cut("no permit of " + key + "'s bucket ("
                + (b == null ? "as stored" : describe(b)) + ") for " + e + " before " + row[1]));
    }

    private static double[] doubles(Array a) throws java.sql.SQLException {
        if (a == null) {
            return null;
        }
        Object[] o = (Object[]) a.getArray();
        double[] d = new double[o.length];
        for (int i = 0; i < o.length; i++) {
            d[i] = o[i] == null ? 0 : ((Number) o[i]).doubleValue();
        }
        return d;
    }

    static String describe(BucketSettings b) {
        List<String> parts = new ArrayList<>();
        if (b.requestsPerMinute() > 0) {
            parts.add(trim(b.requestsPerMinute()) + " requests/min");
        }
        if (b.tokensPerMinute() > 0) {
            parts.add(trim(b.tokensPerMinute()) + " tokens/min");
        }
        if (b.inputTokensPerMinute() > 0) {
            parts.add(trim(b.inputTokensPerMinute()) + " input tokens/min");
        }
        if (b.outputTokensPerMinute() > 0) {
            parts.add(trim(b.outputTokensPerMinute()) + " output tokens/min");
        }
        return String.join(", ", parts);
    }

    static String trim(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
