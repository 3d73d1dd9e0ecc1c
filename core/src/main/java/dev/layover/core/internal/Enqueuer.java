package dev.layover.core.internal;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.Enqueued;
import dev.layover.core.InvalidArgsException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;

/** Inserts jobs: one, or many per statement, on Layover's connection or the caller's. */
public final class Enqueuer {

    /** Rows per batch statement. */
    static final int BATCH = 5000;
    private static final int MAX_PROVIDER_KEY = 200;

    private final Db db;
    private final Clock clock;

    /**
     * @param db the database
     * @param clock the clock
     */
    public Enqueuer(Db db, Clock clock) {
        this.db = db;
        this.clock = clock;
    }

    /**
     * Inserts one job.
     *
     * @param caller the caller's connection (its transaction decides), or {@code null} for an
     *     autocommitted insert on Layover's pool
     */
    public <A> Enqueued enqueue(Connection caller, Registry.Entry<A> entry, A args, EnqueueOptions options) {
        byte[] data = entry.codec().write(args);
        String name = entry.type().name();
        String providerKey = providerKey(entry, args);
        String id = options.key() != null ? options.key() : UUID.randomUUID().toString();
        Instant runAt = options.runTime(clock.instant());
        Db.Work<Integer> insert = c -> {
            boolean keyed = options.key() != null;
            try (PreparedStatement ps = c.prepareStatement(keyed ? CoreSql.INSERT_KEYED : CoreSql.INSERT)) {
                Db.bind(ps, name, id, data, Timestamp.from(runAt), (short) options.priority(), providerKey);
                if (keyed) {
                    ps.setString(7, name);
                    ps.setString(8, id);
                }
                return ps.executeUpdate();
            }
        };
        int rows = run(caller, "enqueueing a " + name + " job", insert);
        return new Enqueued(name, id, rows == 1);
    }

    /**
     * Inserts many jobs of one type, {@value #BATCH} rows per statement.
     *
     * @return one result per arg, in order
     */
    public <A> List<Enqueued> enqueueBatch(Connection caller, Registry.Entry<A> entry, List<A> args,
            Function<? super A, EnqueueOptions> options) {
        String name = entry.type().name();
        Instant now = clock.instant();
        int n = args.size();
        String[] ids = new String[n];
        byte[][] data = new byte[n][];
        String[] runAts = new String[n];
        Integer[] priorities = new Integer[n];
        String[] keys = new String[n];
        for (int i = 0; i < n; i++) {
            A a = args.get(i);
            EnqueueOptions o = options.apply(a);
            data[i] = entry.codec().write(a);
            ids[i] = o.key() != null ? o.key() : UUID.randomUUID().toString();
            runAts[i] = o.runTime(now).toString();
            priorities[i] = o.priority();
            keys[i] = providerKey(entry, a);
        }
        Set<String> created = new HashSet<>();
        for (int from = 0; from < n; from += BATCH) {
            int to = Math.min(n, from + BATCH);
            int f = from;
            Db.Work<Void> insert = c -> {
                try (PreparedStatement ps = c.prepareStatement(CoreSql.INSERT_BATCH)) {
                    ps.setString(1, name);
                    ps.setArray(2, c.createArrayOf("text", java.util.Arrays.copyOfRange(ids, f, to)));
                    ps.setArray(3, c.createArrayOf("bytea", java.util.Arrays.copyOfRange(data, f, to)));
                    ps.setArray(4, c.createArrayOf("text", java.util.Arrays.copyOfRange(runAts, f, to)));
                    ps.setArray(5, c.createArrayOf("int4", java.util.Arrays.copyOfRange(priorities, f, to)));
                    ps.setArray(6, c.createArrayOf("text", java.util.Arrays.copyOfRange(keys, f, to)));
                    ps.setString(7, name);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            created.add(rs.getString(1));
                        }
                    }
                }
                return null;
            };
            run(caller, "enqueueing " + (to - from) + " " + name + " jobs", insert);
        }
        List<Enqueued> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            // a key repeated within the batch is created once: the first occurrence claims it
            out.add(new Enqueued(name, ids[i], created.remove(ids[i])));
        }
        return out;
    }

    private <T> T run(Connection caller, String what, Db.Work<T> work) {
        if (caller == null) {
            return db.autocommit(what, work);
        }
        try {
            return work.run(caller);
        } catch (SQLException e) {
            throw Db.failure(what, e);
        }
    }

    private static <A> String providerKey(Registry.Entry<A> entry, A args) {
        String key = entry.type().providerKeyOf(args);
        if (key != null && (key.isEmpty() || key.length() > MAX_PROVIDER_KEY)) {
            throw new InvalidArgsException("job type '" + entry.type().name() + "': provider key must be 1-"
                    + MAX_PROVIDER_KEY + " characters, got " + key.length());
        }
        return key;
    }
}
