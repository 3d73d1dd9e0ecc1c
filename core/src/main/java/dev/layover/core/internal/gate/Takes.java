package dev.layover.core.internal.gate;

import dev.layover.core.LayoverException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The bucket takes of this instance ({@link StateSql#TAKE_PERMITS}), coalesced: while one
 * statement is in flight, the takes other threads ask for wait, and the next statement takes for
 * all of them, one key at most once per statement (a second take of the same key waits for the
 * statement after). No take waits for more than the statement before it; alone, a take runs at
 * once. Each key's bucket row is updated as by a statement of its own: the arithmetic is per row.
 * Database effect: one {@code TAKE_PERMITS} statement per batch (its bucket rows and, for a job
 * holding a permit, its {@code permit_at}, through V26's {@code layover.spend_held_permit}).
 */
final class Takes {

    /** Takes per statement at most. */
    static final int MAX_BATCH = 64;

    /**
     * One take, as {@link StateSql#TAKE_PERMITS} documents its parameters.
     *
     * @param taskName the job's type, or null (a fallback endpoint)
     * @param taskId the job's id, or null
     * @param version the job's row version, or null
     * @param bookBy the latest slot that may be reserved, or null: any
     */
    record Take(String key, OffsetDateTime now, double rr, double rc, double rn, double rx, double tr, double tc,
            double tn, double tx, boolean mayWait, String taskName, String taskId, Long version, double graceS,
            OffsetDateTime bookBy) {}

    /**
     * What a take got.
     *
     * @param carried the job spent the permit it held; the bucket was left alone
     * @param slot when the bucket row exists: the slot (now when it fitted); null: no row
     * @param requests requests taken (with the lease)
     * @param tokens tokens taken (with the lease)
     */
    record Permit(boolean carried, Instant slot, double requests, double tokens) {}

    private static final class Waiter {
        final Take take;
        Permit permit;
        RuntimeException failure;
        boolean done;

        Waiter(Take take) {
            this.take = take;
        }
    }

    private final GateDb gdb;
    private final Object lock = new Object();
    private final ArrayDeque<Waiter> queue = new ArrayDeque<>();
    private boolean inFlight;

    Takes(GateDb gdb) {
        this.gdb = gdb;
    }

    /**
     * Takes from the bucket of {@code t.key()}, in this thread's statement or in one another
     * thread runs for it meanwhile.
     *
     * @throws RuntimeException the statement's failure, for every take of the batch
     */
    Permit take(Take t) {
        Waiter me = new Waiter(t);
        boolean interrupted = false;
        try {
            while (true) {
                List<Waiter> batch;
                synchronized (lock) {
                    if (!me.done && !queue.contains(me)) {
                        queue.add(me);
                    }
                    while (!me.done && inFlight) {
                        try {
                            lock.wait();
                        } catch (InterruptedException e) {
                            interrupted = true; // the take may be in flight already: its outcome is needed
                        }
                    }
                    if (me.done) {
                        return result(me);
                    }
                    inFlight = true;
                    batch = drain();
                }
                try {
                    run(batch);
                } finally {
                    synchronized (lock) {
                        inFlight = false;
                        lock.notifyAll();
                    }
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** @return takes waiting for a statement (for tests) */
    int queued() {
        synchronized (lock) {
            return queue.size();
        }
    }

    private static Permit result(Waiter w) {
        if (w.failure != null) {
            throw w.failure;
        }
        return w.permit;
    }

    /** The queued takes of distinct keys, first come first, at most {@link #MAX_BATCH}. Under the lock. */
    private List<Waiter> drain() {
        List<Waiter> batch = new ArrayList<>();
        Set<String> keys = new HashSet<>();
        for (Iterator<Waiter> it = queue.iterator(); it.hasNext() && batch.size() < MAX_BATCH;) {
            Waiter w = it.next();
            if (keys.add(w.take.key())) {
                batch.add(w);
                it.remove();
            }
        }
        return batch;
    }

    private void run(List<Waiter> batch) {
        Map<String, Permit> got;
        RuntimeException failure = null;
        try {
            // bucket rows locked in key order, the same in every instance's statements
            batch.sort(Comparator.comparing(w -> w.take.key()));
            got = gdb.inline(batch.size() == 1 ? "taking a permit from the bucket of " + batch.get(0).take.key()
                    : "taking permits from the buckets of " + batch.size() + " keys", c -> execute(c, batch));
        } catch (RuntimeException e) {
            got = Map.of();
            failure = e;
        }
        synchronized (lock) {
            for (Waiter w : batch) {
                w.permit = got.get(w.take.key());
                w.failure = failure != null ? failure : w.permit == null
                        ? new LayoverException("no result of the bucket take of " + w.take.key()) : null;
                w.done = true;
            }
        }
    }

    private static Map<String, Permit> execute(Connection c, List<Waiter> batch) throws SQLException {
        int n = batch.size();
        Object[] keys = new Object[n];
        Object[] nows = new Object[n];
        Object[][] d = new Object[8][n];
        Object[] mayWait = new Object[n];
        Object[] names = new Object[n];
        Object[] ids = new Object[n];
        Object[] versions = new Object[n];
        Object[] grace = new Object[n];
        Object[] bookBy = new Object[n];
        for (int i = 0; i < n; i++) {
            Take t = batch.get(i).take;
            keys[i] = t.key();
            nows[i] = t.now().toString(); // ISO 8601 with its offset: the server reads it exactly
            double[] v = {t.rr(), t.rc(), t.rn(), t.rx(), t.tr(), t.tc(), t.tn(), t.tx()};
            for (int j = 0; j < v.length; j++) {
                d[j][i] = v[j];
            }
            mayWait[i] = t.mayWait();
            names[i] = t.taskName();
            ids[i] = t.taskId();
            versions[i] = t.version();
            grace[i] = t.graceS();
            bookBy[i] = t.bookBy() == null ? null : t.bookBy().toString();
        }
        try (PreparedStatement ps = c.prepareStatement(StateSql.TAKE_PERMITS)) {
            int p = 1;
            ps.setArray(p++, c.createArrayOf("text", keys));
            ps.setArray(p++, c.createArrayOf("timestamptz", nows));
            for (Object[] col : d) {
                ps.setArray(p++, c.createArrayOf("float8", col));
            }
            ps.setArray(p++, c.createArrayOf("bool", mayWait));
            ps.setArray(p++, c.createArrayOf("text", names));
            ps.setArray(p++, c.createArrayOf("text", ids));
            ps.setArray(p++, c.createArrayOf("int8", versions));
            ps.setArray(p++, c.createArrayOf("float8", grace));
            Array books = c.createArrayOf("timestamptz", bookBy);
            ps.setArray(p, books);
            Map<String, Permit> out = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString("key"), new Permit(rs.getBoolean("carried"), GateDb.instant(rs, "last_slot"),
                            rs.getDouble("last_granted_requests"), rs.getDouble("last_granted_tokens")));
                }
            }
            return out;
        }
    }
}
