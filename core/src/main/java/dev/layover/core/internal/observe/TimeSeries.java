package dev.layover.core.internal.observe;

import dev.layover.core.spi.Db;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The counters behind {@code layover.time_series}: what this instance's jobs did, per job type,
 * provider key, counter and detail, counted in memory (no write per job) and written every
 * {@link TimeSeriesSettings#flushEvery()} by one statement ({@link TimeSeriesSql#FLUSH}), which also
 * samples the queue's depth. Rows past their retention are deleted about once a minute. A flush
 * that fails keeps its counts for the next one. Off ({@link #OFF}, or settings off): counts nothing,
 * runs nothing.
 *
 * <p>Bounded with many keys (thousands of tenant keys): a flush writes at most
 * {@link #KEYS_PER_FLUSH} provider keys per job type, those that counted the most since the last
 * flush (the sample: the deepest queues); the others are summed under provider key {@code '*'}. A
 * cell that counted nothing since the last flush is dropped from memory.
 */
public final class TimeSeries {

    private static final Logger LOG = LoggerFactory.getLogger(TimeSeries.class);
    private static final long PURGE_EVERY_NANOS = 60_000_000_000L;

    /** The most provider keys a flush writes per job type; the rest are summed as {@code '*'}. */
    static final int KEYS_PER_FLUSH = 100;
    /** The provider key of the keys past {@link #KEYS_PER_FLUSH}, summed. */
    static final String OTHER_KEYS = "*";
    /** The most fairness keys a flush writes token counts of, per job type; the rest are summed as {@code '*'}. */
    static final int FAIRNESS_KEYS_PER_FLUSH = 100;
    /** The counters of reported tokens, whose detail is the run's fairness key. */
    static final Set<String> TOKEN_COUNTERS = Set.of("input_tokens", "output_tokens", "cached_input_tokens");

    /** The job type interactive calls are counted under. */
    public static final String INTERACTIVE = "(interactive)";
    /** Counts nothing, writes nothing. */
    public static final TimeSeries OFF = new TimeSeries(null, new TimeSeriesSettings(false, null, null, null));

    record Cell(String jobType, String providerKey, String counter, String detail) {}

    private final Db db;
    private final TimeSeriesSettings settings;
    private final Map<Cell, LongAdder> counts = new ConcurrentHashMap<>();
    private final Object flushLock = new Object();
    private long lastPurge;
    private boolean purged;
    private volatile boolean running;
    private volatile boolean failing;
    private Thread thread;

    /**
     * @param db the database (null only for {@link #OFF})
     * @param settings whether and how often to write, and the retention
     */
    public TimeSeries(Db db, TimeSeriesSettings settings) {
        this.db = db;
        this.settings = settings;
    }

    /** @return whether counts are kept */
    public boolean on() {
        return settings.on() && db != null;
    }

    /** A job completed. */
    public void completed(String jobType, String providerKey) {
        add(jobType, providerKey, "completed", null);
    }

    /** A run's outcome was a rate limit (a 429, or the provider's rate-limit answer). */
    public void rateLimited(String jobType, String providerKey) {
        add(jobType, providerKey, "rate_limited", null);
    }

    /** A step of a job ({@code JobContext#step}) {@code completed} (ran and was stored) or was {@code reused}. */
    public void steps(String jobType, String providerKey, String what) {
        add(jobType, providerKey, "steps", what);
    }

    /** A job was rescheduled (or held) without spending an attempt, for {@code reason}. */
    public void rescheduled(String jobType, String providerKey, String reason) {
        add(jobType, providerKey, "rescheduled", reason);
    }

    /** A failed attempt will be retried; {@code kind}: transient, overloaded, error, worker_lost. */
    public void retried(String jobType, String providerKey, String kind) {
        add(jobType, providerKey, "retried", kind);
    }

    /** A job was parked as {@code failureType}. */
    public void parked(String jobType, String providerKey, String failureType) {
        add(jobType, providerKey, "parked", failureType);
    }

    /**
     * A call a fallback chain made to one of its endpoints (a step of the run's trail that was not
     * skipped): counted under the endpoint's key ({@code endpoint_call}, detail: the step's result,
     * {@code answered}, {@code rate_limited}, {@code overloaded}, ...) and under the job's own key
     * ({@code chain_call}, detail: the endpoint's key), so a model key's page finds its endpoints.
     *
     * @param jobType the job's type
     * @param jobKey the job's provider key (the chain's model), or null
     * @param endpointKey the endpoint's provider key
     * @param result the step's result
     */
    public void endpointCall(String jobType, String jobKey, String endpointKey, String result) {
        add(jobType, endpointKey, "endpoint_call", result);
        if (jobKey != null && !jobKey.equals(endpointKey)) {
            add(jobType, jobKey, "chain_call", endpointKey);
        }
    }

    /**
     * The tokens a run's call reported (each null when not reported), per job type, provider key and
     * fairness key: counters {@code input_tokens} (cached included), {@code output_tokens},
     * {@code cached_input_tokens}, detail the fairness key ({@code ''} for none).
     */
    public void tokens(String jobType, String providerKey, String fairnessKey, Long input, Long output, Long cached) {
        add(jobType, providerKey, "input_tokens", fairnessKey, input == null ? 0 : input);
        add(jobType, providerKey, "output_tokens", fairnessKey, output == null ? 0 : output);
        add(jobType, providerKey, "cached_input_tokens", fairnessKey, cached == null ? 0 : cached);
    }

    /**
     * An interactive call (a call made outside jobs) was admitted: counter {@code interactive_admitted}
     * under job type {@code (interactive)}, and {@code interactive_wait_ms} (the wait before it, summed:
     * divided by the admissions, the mean wait).
     */
    public void interactiveAdmitted(String providerKey, long waitedMs) {
        add(INTERACTIVE, providerKey, "interactive_admitted", null);
        add(INTERACTIVE, providerKey, "interactive_wait_ms", null, waitedMs);
    }

    /** An interactive call was not admitted: {@code interactive_refused}, detail the reason ({@code cooling}, ...). */
    public void interactiveRefused(String providerKey, String reason) {
        add(INTERACTIVE, providerKey, "interactive_refused", reason);
    }

    /** An admitted interactive call's outcome was recorded: {@code interactive_call}, detail the outcome's tag. */
    public void interactiveCall(String providerKey, String outcomeTag) {
        add(INTERACTIVE, providerKey, "interactive_call", outcomeTag);
    }

    private void add(String jobType, String providerKey, String counter, String detail) {
        add(jobType, providerKey, counter, detail, 1);
    }

    private void add(String jobType, String providerKey, String counter, String detail, long amount) {
        if (!on() || jobType == null || amount <= 0) {
            return;
        }
        // incremented inside compute: a flush dropping an idle cell (computeIfPresent) never loses a count
        counts.compute(new Cell(jobType, providerKey == null ? "" : providerKey, counter, detail == null ? "" : detail),
                (c, n) -> {
                    LongAdder a = n == null ? new LongAdder() : n;
                    a.add(amount);
                    return a;
                });
    }

    /** Starts the flushing thread (when on). */
    public synchronized void start(String workerName) {
        if (!on() || running) {
            return;
        }
        running = true;
        thread = new Thread(this::loop, "layover-time-series-" + workerName);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Stops the flushing thread and writes what is left (best effort: the database may be gone).
     *
     * @param writeLeft whether to write the counts not flushed yet (not while the database is away)
     */
    public synchronized void stop(boolean writeLeft) {
        if (thread == null) {
            return;
        }
        running = false;
        thread.interrupt();
        try {
            thread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        thread = null;
        if (!writeLeft) {
            return;
        }
        try {
            flush();
        } catch (RuntimeException e) {
            LOG.debug("Layover: the last time series flush failed; its counts are lost", e);
        }
    }

    private void loop() {
        while (running) {
            try {
                Thread.sleep(settings.flushEvery().toMillis());
            } catch (InterruptedException e) {
                return;
            }
            try {
                flush();
                if (failing) {
                    LOG.info("Layover: the time series is written again");
                    failing = false;
                }
            } catch (RuntimeException e) {
                if (!failing) {
                    LOG.warn("Layover: cannot write the time series (its counts are kept for the next flush): {}",
                            e.getMessage());
                    failing = true;
                }
            }
        }
    }

    /**
     * Writes the counts gathered since the last flush, with a sample of the queue's depth, and
     * deletes rows past their retention when a minute has passed since the last purge.
     *
     * @return the rows written (inserted or updated)
     */
    public long flush() {
        if (!on()) {
            return 0;
        }
        synchronized (flushLock) {
            List<String> types = new ArrayList<>();
            List<String> keys = new ArrayList<>();
            List<String> counters = new ArrayList<>();
            List<String> details = new ArrayList<>();
            List<Long> amounts = new ArrayList<>();
            List<Map.Entry<Cell, Long>> taken = new ArrayList<>();
            for (Map.Entry<Cell, LongAdder> e : counts.entrySet()) {
                long n = e.getValue().sumThenReset();
                if (n != 0) {
                    taken.add(Map.entry(e.getKey(), n));
                } else {
                    counts.computeIfPresent(e.getKey(), (c, a) -> a.sum() == 0 ? null : a);
                }
            }
            for (Map.Entry<Cell, Long> t : folded(foldedFairness(taken))) {
                Cell c = t.getKey();
                types.add(c.jobType());
                keys.add(c.providerKey());
                counters.add(c.counter());
                details.add(c.detail());
                amounts.add(t.getValue());
            }
            try {
                long written = db.autocommit("writing the time series", c -> write(c, types, keys, counters, details, amounts));
                purgeWhenDue();
                return written;
            } catch (RuntimeException e) {
                for (Map.Entry<Cell, Long> t : taken) {
                    counts.computeIfAbsent(t.getKey(), k -> new LongAdder()).add(t.getValue());
                }
                throw e;
            }
        }
    }

    /**
     * The token counts to write: per job type, the fairness keys past the
     * {@link #FAIRNESS_KEYS_PER_FLUSH} that reported the most tokens summed as fairness key {@code '*'}.
     */
    static List<Map.Entry<Cell, Long>> foldedFairness(List<Map.Entry<Cell, Long>> taken) {
        Map<String, Map<String, Long>> perFlow = new HashMap<>();
        for (Map.Entry<Cell, Long> t : taken) {
            Cell c = t.getKey();
            if (TOKEN_COUNTERS.contains(c.counter()) && !c.detail().isEmpty()) {
                perFlow.computeIfAbsent(c.jobType(), k -> new HashMap<>()).merge(c.detail(), t.getValue(), Long::sum);
            }
        }
        Map<String, Set<String>> kept = new HashMap<>();
        for (Map.Entry<String, Map<String, Long>> e : perFlow.entrySet()) {
            if (e.getValue().size() > FAIRNESS_KEYS_PER_FLUSH) {
                kept.put(e.getKey(), e.getValue().entrySet().stream()
                        .sorted(Map.Entry.<String, Long>comparingByValue().reversed().thenComparing(Map.Entry.comparingByKey()))
                        .limit(FAIRNESS_KEYS_PER_FLUSH).map(Map.Entry::getKey).collect(Collectors.toSet()));
            }
        }
        if (kept.isEmpty()) {
            return taken;
        }
        Map<Cell, Long> out = new LinkedHashMap<>();
        for (Map.Entry<Cell, Long> t : taken) {
            Cell c = t.getKey();
            Set<String> keep = kept.get(c.jobType());
            Cell to = keep == null || !TOKEN_COUNTERS.contains(c.counter()) || c.detail().isEmpty()
                    || keep.contains(c.detail()) ? c : new Cell(c.jobType(), c.providerKey(), c.counter(), OTHER_KEYS);
            out.merge(to, t.getValue(), Long::sum);
        }
        return new ArrayList<>(out.entrySet());
    }

    /** The counts to write: per job type, the keys past the {@link #KEYS_PER_FLUSH} busiest summed as {@code '*'}. */
    static List<Map.Entry<Cell, Long>> folded(List<Map.Entry<Cell, Long>> taken) {
        Map<String, Map<String, Long>> perKey = new HashMap<>();
        for (Map.Entry<Cell, Long> t : taken) {
            // ranked by events: token counts, far larger numbers, do not decide which keys are the busiest
            long events = TOKEN_COUNTERS.contains(t.getKey().counter()) ? 0 : t.getValue();
            perKey.computeIfAbsent(t.getKey().jobType(), k -> new HashMap<>()).merge(t.getKey().providerKey(), events, Long::sum);
        }
        Map<String, Set<String>> kept = new HashMap<>();
        boolean any = false;
        for (Map.Entry<String, Map<String, Long>> e : perKey.entrySet()) {
            if (e.getValue().size() <= KEYS_PER_FLUSH) {
                continue;
            }
            any = true;
            kept.put(e.getKey(), e.getValue().entrySet().stream()
                    .sorted(Map.Entry.<String, Long>comparingByValue().reversed().thenComparing(Map.Entry.comparingByKey()))
                    .limit(KEYS_PER_FLUSH).map(Map.Entry::getKey).collect(Collectors.toSet()));
        }
        if (!any) {
            return taken;
        }
        Map<Cell, Long> out = new LinkedHashMap<>();
        for (Map.Entry<Cell, Long> t : taken) {
            Cell c = t.getKey();
            Set<String> keep = kept.get(c.jobType());
            Cell to = keep == null || keep.contains(c.providerKey()) ? c
                    : new Cell(c.jobType(), OTHER_KEYS, c.counter(), c.detail());
            out.merge(to, t.getValue(), Long::sum);
        }
        return new ArrayList<>(out.entrySet());
    }

    private long write(Connection c, List<String> types, List<String> keys, List<String> counters, List<String> details,
            List<Long> amounts) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(TimeSeriesSql.FLUSH)) {
            ps.setArray(1, c.createArrayOf("text", types.toArray()));
            ps.setArray(2, c.createArrayOf("text", keys.toArray()));
            ps.setArray(3, c.createArrayOf("text", counters.toArray()));
            ps.setArray(4, c.createArrayOf("text", details.toArray()));
            ps.setArray(5, c.createArrayOf("bigint", amounts.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private void purgeWhenDue() {
        long now = System.nanoTime();
        if (purged && now - lastPurge < PURGE_EVERY_NANOS) {
            return;
        }
        purgeNow();
        purged = true;
        lastPurge = now;
    }

    /**
     * Deletes rows past their retention now.
     *
     * @return the rows deleted
     */
    public int purgeNow() {
        return db.autocommit("deleting old time series rows", c -> {
            try (PreparedStatement ps = c.prepareStatement(TimeSeriesSql.PURGE)) {
                ps.setDouble(1, settings.keepTenSecond().toMillis() / 1000.0);
                ps.setDouble(2, settings.keepMinute().toMillis() / 1000.0);
                return ps.executeUpdate();
            }
        });
    }
}
