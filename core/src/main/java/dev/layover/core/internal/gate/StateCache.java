package dev.layover.core.internal.gate;

import static dev.layover.core.internal.gate.GateDb.instant;
import static dev.layover.core.internal.time.Durations.seconds;
import static dev.layover.core.internal.gate.GateDb.ts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.provider.state.BreakerState;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this instance knows of each provider key's breaker, cooldown and learned pace, and how it
 * stays fresh: a background thread re-reads every known key in one query each second and writes
 * the breaker successes counted since (one statement), and a LISTEN connection ({@link Notifier})
 * re-reads at once when another JVM changes a breaker or a cooldown. A key seen for the first time,
 * or whose read is older than {@link #MAX_STALENESS} (the refresh failing), is read inline.
 *
 * <p>Bounded by use, not by the keys ever met: the refresh re-reads only keys used within
 * {@link #REFRESH_WHILE_USED} (a key idle longer is read inline at its next use), and a key unused
 * for {@link #FORGET_AFTER} is dropped, with what the other parts of the gate keep of it
 * ({@link #onForget}). With 10,000 tenant keys of which 100 are busy, the refresh reads 100 rows a
 * second and the cache holds the keys of the last ten minutes.
 */
final class StateCache {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderGate.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    static final Duration REFRESH_INTERVAL = Duration.ofSeconds(1);
    static final Duration MAX_STALENESS = Duration.ofSeconds(5);
    /** A key unused this long is left out of the background refresh; its next use reads it inline. */
    static final Duration REFRESH_WHILE_USED = Duration.ofSeconds(60);
    /** A key unused this long is forgotten (its counted breaker successes written first). */
    static final Duration FORGET_AFTER = Duration.ofMinutes(10);

    private final GateDb gdb;
    private final Clock clock;
    private final BreakerEvents events;
    private final Function<String, Duration> breakerWindow;
    private final boolean listen;
    private final ConcurrentHashMap<String, KeyState> keys = new ConcurrentHashMap<>();
    private final CopyOnWriteArrayList<Runnable> notificationHooks = new CopyOnWriteArrayList<>();
    private final CopyOnWriteArrayList<Consumer<String>> forgetHooks = new CopyOnWriteArrayList<>();
    private final CopyOnWriteArrayList<Runnable> refreshHooks = new CopyOnWriteArrayList<>();
    private final LongSupplier ticker;
    private final Object wake = new Object();
    private volatile boolean running;
    private volatile boolean wakeRequested;
    private volatile boolean refreshFailing;
    private Thread refresher;
    private Notifier notifier;

    /**
     * @param breakerWindow each key's breaker counting window (successes are flushed with it)
     * @param listen whether to hold a connection in {@code LISTEN} (else the refresh alone sees other JVMs' changes)
     */
    StateCache(GateDb gdb, Clock clock, BreakerEvents events, Function<String, Duration> breakerWindow, boolean listen) {
        this(gdb, clock, events, breakerWindow, listen, System::nanoTime);
    }

    /** @param ticker nanoseconds for the use windows ({@link System#nanoTime()}; tests pass their own) */
    StateCache(GateDb gdb, Clock clock, BreakerEvents events, Function<String, Duration> breakerWindow, boolean listen,
            LongSupplier ticker) {
        this.ticker = ticker;
        this.listen = listen;
        this.gdb = gdb;
        this.clock = clock;
        this.events = events;
        this.breakerWindow = breakerWindow;
    }

    synchronized void start() {
        running = true;
        refresher = new Thread(this::refreshLoop, "layover-provider-state-" + gdb.workerName);
        refresher.setDaemon(true);
        refresher.start();
        if (listen) {
            notifier = new Notifier(gdb.db.dataSource(), this, "layover-provider-notify-" + gdb.workerName);
            notifier.start();
        }
    }

    /** Stops the threads and writes the successes not yet written. */
    synchronized void stop() {
        running = false;
        wakeUp();
        if (notifier != null) {
            notifier.stop();
        }
        try {
            refresher.join(3000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            flushSuccesses();
        } catch (RuntimeException e) {
            LOG.warn("Layover: could not write the last breaker successes at shutdown: {}", e.getMessage());
        }
    }

    boolean running() {
        return running;
    }

    /** Now, at the database's precision, so that times read back compare equal to times written. */
    Instant now() {
        return clock.instant().truncatedTo(ChronoUnit.MICROS);
    }

    /** The key's state, created when missing; marks the key used. */
    KeyState keyState(String key) {
        KeyState ks = keys.get(key);
        if (ks == null) {
            ks = keys.computeIfAbsent(key, KeyState::new);
        }
        ks.usedAt = ticker.getAsLong();
        return ks;
    }

    /** @return how many keys this instance keeps */
    int size() {
        return keys.size();
    }

    /** @return the key's state if this instance met the key, else null */
    KeyState known(String key) {
        return keys.get(key);
    }

    /** The key's snapshot, read from the database when missing or older than the staleness bound. */
    Snapshot fresh(KeyState ks) {
        Snapshot s = cached(ks);
        if (s != null) {
            return s;
        }
        synchronized (ks.loadLock) {
            s = cached(ks);
            if (s != null) {
                return s;
            }
            ks.rowMissing = false;
            load(List.of(ks.key), Read.INLINE);
            return ks.snapshot;
        }
    }

    /** @return the key's snapshot when it is within the staleness bound, else null (reads nothing) */
    Snapshot cached(KeyState ks) {
        Snapshot s = ks.snapshot;
        return s != null && !ks.rowMissing && System.nanoTime() - ks.loadedAt < MAX_STALENESS.toNanos() ? s : null;
    }

    /** A write found no breaker row for the key (an operator deleted it): its next use reads it inline, creating it. */
    void breakerRowMissing(KeyState ks) {
        ks.rowMissing = true;
    }

    /** Changes the cached snapshot of a key after this instance wrote it. */
    void update(KeyState ks, UnaryOperator<Snapshot> f) {
        synchronized (ks.loadLock) {
            Snapshot s = ks.snapshot;
            if (s != null) {
                ks.snapshot = f.apply(s);
            }
        }
    }

    /** How a read is made: which statement, and whether it runs on a worker thread. */
    private enum Read {
        /** on a worker thread, for keys met for the first time or again: creates their breakers ({@link StateSql#LOAD_ENSURING}) */
        INLINE(StateSql.LOAD_ENSURING),
        /** after another instance's change ({@link StateSql#LOAD}) */
        NOTIFIED(StateSql.LOAD),
        /** the background refresh of the keys in use: only keys not plain come back ({@link StateSql#REFRESH}) */
        REFRESH(StateSql.REFRESH);

        final String sql;

        Read(String sql) {
            this.sql = sql;
        }
    }

    /** Reads the keys' breakers, cooldowns and learned paces in one query; creates missing breaker rows. */
    private void load(List<String> keyList, Read how) {
        long started = System.nanoTime();
        boolean background = how != Read.INLINE;
        List<String> missing = new ArrayList<>();
        Map<String, Object[]> paces = new HashMap<>();
        Map<String, Snapshot> read = gdb.run(background, "reading the provider state of " + keyList.size() + " keys", c -> {
            Map<String, Snapshot> out = new HashMap<>();
            try (PreparedStatement ps = c.prepareStatement(how.sql)) {
                java.sql.Array keys = c.createArrayOf("text", keyList.toArray());
                if (how == Read.INLINE) {
                    Db.bind(ps, gdb.workerName, gdb.origin, keys, keys);
                } else {
                    ps.setArray(1, keys);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        boolean has = rs.getBoolean("has_breaker");
                        String key = rs.getString("key");
                        if (!has) {
                            missing.add(key);
                        }
                        out.put(key, new Snapshot(has, BreakerState.fromCode(rs.getString("state")),
                                instant(rs, "open_until"), rs.getBoolean("trial_claimed"), instant(rs, "trial_claimed_at"),
                                instant(rs, "trial_expires_at"), rs.getString("reason"), instant(rs, "until"),
                                rs.getString("cooldown_reason"), rs.getString("cooldown_detail")));
                        paces.put(key, new Object[] {new Paces.Rates(rs.getDouble("learned_rpm"), rs.getDouble("learned_tpm"),
                                rs.getDouble("learned_itpm"), rs.getDouble("learned_otpm")), instant(rs, "learned_until"),
                                rs.getBoolean("discovered")});
                    }
                }
            }
            return out;
        });
        for (String key : how == Read.REFRESH ? keyList : read.keySet()) {
            KeyState ks = keys.get(key);
            if (ks == null || (ks.snapshot != null && ks.loadedAt - started > 0)) {
                continue; // forgotten, or a read that started later (a notification's) landed first: this one is older
            }
            Snapshot s = read.get(key);
            if (s == null && ks.snapshot == null) {
                continue; // never read inline: its first use does, and creates its breaker row
            }
            if (s == null) { // the refresh: not marked, so plain
                ks.snapshot = isPlain(ks.snapshot) ? ks.snapshot : Snapshot.CLOSED;
                ks.learned = null;
            } else {
                ks.snapshot = s;
                Object[] pace = paces.get(key);
                ks.learned = Paces.learned((Paces.Rates) pace[0], (Instant) pace[1], (Boolean) pace[2], ks.learned);
            }
            ks.loadedAt = started;
        }
        if (!missing.isEmpty()) {
            ensureBreakers(missing, background);
        }
    }

    /** @return whether a snapshot says what a plain key's does: closed, no trial, no cooldown */
    private static boolean isPlain(Snapshot s) {
        return s != null && s.hasBreakerRow() && s.state() == BreakerState.CLOSED && !s.trialClaimed() && s.cooldownUntil() == null;
    }

    /** Creates closed breakers for keys seen for the first time. */
    void ensureBreakers(List<String> keyList, boolean background) {
        gdb.run(background, "creating the breakers of " + keyList, c -> {
            try (PreparedStatement ps = c.prepareStatement(StateSql.ENSURE_BREAKERS)) {
                ps.setString(1, gdb.workerName);
                ps.setString(2, gdb.origin);
                ps.setArray(3, c.createArrayOf("text", keyList.toArray()));
                return ps.executeUpdate();
            }
        });
    }

    private void refreshLoop() {
        while (running) {
            synchronized (wake) {
                if (!wakeRequested) {
                    try {
                        wake.wait(REFRESH_INTERVAL.toMillis());
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                wakeRequested = false;
            }
            if (!running) {
                return;
            }
            refreshOnce();
        }
    }

    /** One background round: writes counted successes, re-reads the keys in use, forgets the long unused. */
    void refreshOnce() {
        try {
            flushSuccesses();
            List<String> inUse = new ArrayList<>();
            long now = ticker.getAsLong();
            for (KeyState ks : keys.values()) {
                long idle = now - ks.usedAt;
                if (idle < REFRESH_WHILE_USED.toNanos()) {
                    inUse.add(ks.key);
                } else if (idle >= FORGET_AFTER.toNanos()) {
                    forget(ks);
                }
            }
            if (!inUse.isEmpty()) {
                load(inUse, Read.REFRESH);
            }
            for (Runnable hook : refreshHooks) {
                hook.run();
            }
            if (refreshFailing) {
                refreshFailing = false;
                LOG.info("Layover: provider state readable again");
            }
        } catch (RuntimeException e) {
            if (!refreshFailing) {
                refreshFailing = true;
                LOG.warn("Layover: cannot refresh the provider state (will retry every {} ms; after {} s without a "
                        + "fresh read, jobs of these keys wait instead of calling): {}", REFRESH_INTERVAL.toMillis(),
                        MAX_STALENESS.toSeconds(), e.getMessage());
            }
        }
    }

    private void forget(KeyState ks) {
        if (!keys.remove(ks.key, ks)) {
            return;
        }
        if (ks.successes.sum() > 0) {
            keys.putIfAbsent(ks.key, ks); // a call finished since the flush: keep it for the next one
            return;
        }
        for (Consumer<String> hook : forgetHooks) {
            hook.accept(ks.key);
        }
    }

    /** Runs {@code hook} with each key the cache forgets, so that per-key memory elsewhere ends with it. */
    void onForget(Consumer<String> hook) {
        forgetHooks.add(Objects.requireNonNull(hook, "hook"));
    }

    private void flushSuccesses() {
        List<String> names = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        List<Double> windows = new ArrayList<>();
        List<KeyState> states = new ArrayList<>();
        for (KeyState ks : keys.values()) {
            long n = ks.successes.sumThenReset();
            if (n > 0) {
                names.add(ks.key);
                counts.add((int) Math.min(Integer.MAX_VALUE, n));
                windows.add(seconds(breakerWindow.apply(ks.key)));
                states.add(ks);
            }
        }
        if (names.isEmpty()) {
            return;
        }
        try {
            gdb.run(true, "writing breaker successes", c -> {
                try (PreparedStatement ps = c.prepareStatement(StateSql.ADD_SUCCESSES)) {
                    ps.setObject(1, ts(now()));
                    ps.setArray(2, c.createArrayOf("text", names.toArray()));
                    ps.setArray(3, c.createArrayOf("int4", counts.toArray()));
                    ps.setArray(4, c.createArrayOf("float8", windows.toArray()));
                    return ps.executeUpdate();
                }
            });
        } catch (RuntimeException e) {
            for (int i = 0; i < states.size(); i++) {
                states.get(i).successes.add(counts.get(i));
            }
            throw e;
        }
    }

    /** Asks the background thread for a round now (after a NOTIFY, or a lost trial claim). */
    void wakeUp() {
        synchronized (wake) {
            wakeRequested = true;
            wake.notifyAll();
        }
    }

    /** A NOTIFY from the tables' triggers: tell listeners of other instances' changes, re-read. */
    void onNotification(String payload) {
        try {
            JsonNode n = JSON.readTree(payload);
            String key = n.path("key").asText(null);
            if (key != null && keys.containsKey(key) && !gdb.origin.equals(n.path("origin").asText())) {
                // read the change before telling anyone of it: a job admitted after a listener heard
                // of a forced opening must not pass on the snapshot from before it
                try {
                    load(List.of(key), Read.NOTIFIED);
                } catch (RuntimeException e) {
                    LOG.debug("Layover: could not read {} after its notification (the refresh will): {}", key, e.toString());
                }
            }
            if (key != null && "breakers".equals(n.path("table").asText()) && !gdb.origin.equals(n.path("origin").asText())) {
                String from = n.path("from").asText(null);
                String to = n.path("to").asText(null);
                if (from != null && to != null && !from.equals(to)) {
                    events.emit(key, BreakerState.fromCode(from), BreakerState.fromCode(to), n.path("reason").asText(null),
                            clock.instant(), n.path("by").asText(null), false);
                }
            }
        } catch (Exception e) {
            LOG.warn("Layover: unreadable provider state notification {}: {}", payload, e.toString());
        }
        wakeUp();
        for (Runnable hook : notificationHooks) {
            hook.run();
        }
    }

    /** Runs {@code hook} at every background refresh, on its thread (a notification wakes it); it may throw. */
    void onRefresh(Runnable hook) {
        refreshHooks.add(Objects.requireNonNull(hook, "hook"));
    }

    /** Runs {@code hook} for every notification on the provider state channel (pauses and cancels use it too). */
    void addNotificationHook(Runnable hook) {
        notificationHooks.add(Objects.requireNonNull(hook, "hook"));
    }
}
