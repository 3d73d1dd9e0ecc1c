package dev.layover.core.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.LayoverException;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.Admission;
import dev.layover.core.provider.state.ProviderGate;
import dev.layover.core.provider.state.ProviderRun;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where an outcome becomes a database write. Every write is version-checked: if the
 * row changed since it was picked (revived as dead, cancelled, parked by someone else), nothing is
 * written and the other writer's view stands.
 *
 * <ul>
 *   <li>done: the row is deleted by the batch completer;
 *   <li>reschedule (snooze, rate limit, quota wait): run time moved, {@code reschedules + 1},
 *       {@code consecutive_failures} untouched; parks once the cap is reached;
 *   <li>retry (overloaded, transient, the job's own error, a lost worker): {@code
 *       consecutive_failures + 1}, the error appended, full-jitter backoff; parks once attempts run
 *       out;
 *   <li>park: the dead letter written and the row deleted in one transaction.
 * </ul>
 *
 * <p>For a job with a provider key it also tells the {@link ProviderGate} what the call taught
 * (cooldown, breaker success or failure) and waits at least as long as the key's cooldown. The
 * fallback trail of the run ({@code provider_trail}) is appended by the same write.
 */
public final class OutcomeWriter {

    private static final Logger LOG = LoggerFactory.getLogger(OutcomeWriter.class);

    /** Error messages are stored cut to this many characters. */
    public static final int MAX_MESSAGE = 2000;

    private static final String WORKER_LOST = "worker_lost";
    private static final String NO_TRAIL = "[]";

    private final Db db;
    private final Clock clock;
    private final BatchCompleter completer;
    private final ProviderGate gate;
    private final DatabaseOutage outage;
    private final Observability observability;
    private final ObjectMapper json = new ObjectMapper();

    OutcomeWriter(Db db, Clock clock, BatchCompleter completer, ProviderGate gate, DatabaseOutage outage) {
        this(db, clock, completer, gate, outage, Observability.DEFAULT);
    }

    OutcomeWriter(Db db, Clock clock, BatchCompleter completer, ProviderGate gate, DatabaseOutage outage,
            Observability observability) {
        this.observability = observability;
        this.db = db;
        this.clock = clock;
        this.completer = completer;
        this.gate = gate;
        this.outage = outage;
    }

    /** How long an outcome write waits for a database that went away. */
    private static final Duration OUTAGE_WAIT = Duration.ofHours(24);

    /**
     * Runs one write of an outcome. When the database is away (a connection error), waits until
     * it answers again and writes then: a finished job is neither lost nor run again because of a
     * database restart. Every write is version-checked, so writing it again after an error whose
     * commit is unknown is harmless (the second finds the version moved on and changes nothing).
     * Gives up when the engine stops (the row stays picked and is revived as a lost worker's).
     */
    private <T> T write(String what, boolean transaction, Db.Work<T> work) {
        int quickRetries = 0;
        long pauseMs = 100;
        while (true) {
            try {
                return transaction ? db.transaction(what, work) : db.autocommit(what, work);
            } catch (LayoverException e) {
                if (outage == null || !DatabaseOutage.isConnectionFailure(e)) {
                    throw e;
                }
                outage.failed(e);
                int seen = outage.outages();
                try {
                    if (!outage.awaitWritable(OUTAGE_WAIT)) {
                        throw new Stopping(e);
                    }
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new Stopping(e);
                }
                // a connection error with no outage behind it (one broken pooled connection): retry a few times
                if (outage.outages() == seen && ++quickRetries > 3) {
                    throw e;
                }
                try {
                    Thread.sleep(pauseMs);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new Stopping(e);
                }
                pauseMs = Math.min(1000, pauseMs * 2);
            }
        }
    }

    /** A write abandoned because the worker stops while the database is away. */
    static final class Stopping extends LayoverException {
        private static final long serialVersionUID = 1L;

        Stopping(LayoverException cause) {
            super("the worker stopped while the database was away: " + cause.getMessage(), cause);
        }
    }

    /** Applies an outcome that did not come from a handler run (no provider call was recorded). */
    void apply(JobRun run, Outcome outcome) {
        apply(run, outcome, null);
    }

    /**
     * Applies a handler's outcome to its job row, after telling the provider state what the call
     * taught when the job has a provider key.
     */
    void apply(JobRun run, Outcome outcome, ProviderRun pr) {
        guard(run, () -> applyNow(run, outcome, pr));
    }

    private void applyNow(JobRun run, Outcome outcome, ProviderRun pr) {
        String key = pr == null ? null : pr.providerKey();
        Instant cooldown = key == null ? null : gate.afterCall(key, pr.trialToken(), outcome);
        String trail = pr == null ? NO_TRAIL : cleanTrail(pr.trailJson());
        Instant now = clock.instant();
        if (outcome instanceof Outcome.Done) {
            completed(run, trail);
        } else if (outcome instanceof Outcome.Snooze s) {
            reschedule(run, now, now.plus(s.delay()), "snooze", s.reason(), FailureType.SNOOZE_EXHAUSTED, null, trail);
        } else if (outcome instanceof Outcome.RateLimited r) {
            rateLimited(run, now, r, cooldown, trail);
        } else if (outcome instanceof Outcome.QuotaExhausted q) {
            quota(run, now, q, cooldown, trail);
        } else if (outcome instanceof Outcome.Overloaded o) {
            retry(run, now, FailureType.PROVIDER_UNAVAILABLE, "overloaded", "ProviderOverloaded", o.reason(),
                    atLeast(o.retryAfter(), now, cooldown), trail);
        } else if (outcome instanceof Outcome.Transient t) {
            retry(run, now, FailureType.PROVIDER_UNAVAILABLE, "transient",
                    className(t.cause(), "ProviderTransientFailure"), message(t.reason(), t.cause()), null, trail);
        } else if (outcome instanceof Outcome.Retry r) {
            retry(run, now, FailureType.JOB_ERROR, "error", className(r.cause(), "JobError"),
                    message(r.reason(), r.cause()), r.minDelay(), trail);
        } else if (outcome instanceof Outcome.AuthRefused a) {
            park(run, now, FailureType.AUTH_REFUSED, "auth_refused", "ProviderAuthRefused", a.reason(), false, trail);
        } else if (outcome instanceof Outcome.Rejected r) {
            park(run, now, FailureType.REJECTED, "rejected", "ProviderRejected", r.reason(), false, trail);
        } else if (outcome instanceof Outcome.Park p) {
            park(run, now, FailureType.HANDLER_PARKED, "parked", "HandlerParked", p.reason(), false, trail);
        } else {
            throw new IllegalStateException("unknown outcome " + outcome);
        }
    }

    /** Parks a job for a reason the engine found (bad args, an open breaker), no attempt spent. */
    void park(JobRun run, FailureType type, String errorClass, String message) {
        guard(run, () -> park(run, clock.instant(), type, type.code(), errorClass, message, false, NO_TRAIL));
    }

    /**
     * The provider state said "not now" before the handler ran (cooldown, half-open breaker, no
     * bucket permit, state unreadable): a reschedule without an attempt; past the job type's
     * {@code maxDeferral} or {@code maxReschedules} it parks as {@code rate_limit_exhausted}.
     */
    void waitForProvider(JobRun run, Admission.Wait w) {
        guard(run, () -> waitForProviderNow(run, w));
    }

    private void waitForProviderNow(JobRun run, Admission.Wait w) {
        Instant now = clock.instant();
        Duration wait = Duration.between(now, w.runAt());
        Duration max = run.policy().maxDeferral();
        if (wait.compareTo(max) > 0) {
            park(run, now, FailureType.RATE_LIMIT_EXHAUSTED, w.reason(), "RateLimited",
                    "would wait " + wait + ", longer than maxDeferral " + max + ": " + w.detail(), false, NO_TRAIL);
            return;
        }
        reschedule(run, now, w.runAt(), w.reason(), w.detail(), FailureType.RATE_LIMIT_EXHAUSTED, w.permitAt(), NO_TRAIL);
    }

    /**
     * A handler interrupted because its worker is stopping ({@code Layover.stop()} ran out of
     * {@code shutdownMaxWait}): the job did not fail, so it runs again at once, elsewhere or after
     * a restart, without spending an attempt (a reschedule, reason {@code worker_stopped}). A
     * breaker trial it held is given back.
     */
    void workerStopped(JobRun run, ProviderRun pr) {
        guard(run, () -> workerStoppedNow(run, pr));
    }

    private void workerStoppedNow(JobRun run, ProviderRun pr) {
        String trail = NO_TRAIL;
        if (pr != null && pr.providerKey() != null) {
            gate.afterCall(pr.providerKey(), pr.trialToken(), Outcome.snooze(Duration.ZERO));
            trail = cleanTrail(pr.trailJson());
        }
        Instant now = clock.instant();
        reschedule(run, now, now, "worker_stopped", "the worker stopped while the job ran (shutdownMaxWait "
                + "reached); it runs again without spending an attempt", FailureType.SNOOZE_EXHAUSTED, null, trail);
    }

    /** A job whose worker stopped heartbeating: an attempt spent, then retried or parked. */
    void workerLost(JobRun run, Instant lastHeartbeat) {
        guard(run, () -> retry(run, clock.instant(), FailureType.JOB_ERROR, WORKER_LOST, "WorkerLost",
                "the worker running this job stopped sending heartbeats (last at " + lastHeartbeat
                        + "): killed, hung, or cut off from the database", null));
    }

    /**
     * Runs an outcome's writes; a write abandoned because the worker stops during a database
     * outage leaves the row picked (another worker revives it once its heartbeat is old) and is
     * not logged per job (the engine says it once).
     */
    private static void guard(JobRun run, Runnable writes) {
        try {
            writes.run();
        } catch (Stopping s) {
            LOG.debug("Job {}: outcome not written, the worker stopped while the database was away", run.label());
        }
    }

    /** A rate limit: run_at = now + max(retryAfter, the key's cooldown left) + jitter. */
    private void rateLimited(JobRun run, Instant now, Outcome.RateLimited r, Instant cooldown, String trail) {
        Duration wait = r.retryAfter();
        if (wait == null && cooldown == null) {
            wait = Backoff.rateLimitDefault(reschedulesOf(run));
        }
        wait = atLeast(wait, now, cooldown);
        Duration max = run.policy().maxDeferral();
        if (wait.compareTo(max) > 0) {
            park(run, now, FailureType.RATE_LIMIT_EXHAUSTED, "rate_limited", "RateLimited",
                    "asked to wait " + wait + ", longer than maxDeferral " + max + ": " + r.reason(), false, trail);
            return;
        }
        Instant runAt = now.plus(wait).plus(Backoff.rescheduleJitter(wait));
        reschedule(run, now, runAt, "rate_limited", r.reason(), FailureType.RATE_LIMIT_EXHAUSTED, null, trail);
    }

    private void quota(JobRun run, Instant now, Outcome.QuotaExhausted q, Instant cooldown, String trail) {
        Duration max = run.policy().maxDeferral();
        if (q.resetAt() == null || q.resetAt().isAfter(now.plus(max))) {
            String when = q.resetAt() == null ? "no known reset" : "reset at " + q.resetAt() + ", beyond maxDeferral " + max;
            park(run, now, FailureType.QUOTA_EXHAUSTED, "quota_exhausted", "QuotaExhausted",
                    q.reason() + " (" + when + ")", false, trail);
            return;
        }
        Instant reset = q.resetAt().isBefore(now) ? now : q.resetAt();
        if (cooldown != null && cooldown.isAfter(reset) && !cooldown.isAfter(now.plus(max))) {
            reset = cooldown;
        }
        Instant runAt = reset.plus(Backoff.rescheduleJitter(Duration.between(now, reset)));
        reschedule(run, now, runAt, "quota_exhausted", q.reason() + " (resets at " + q.resetAt() + ")",
                FailureType.QUOTA_EXHAUSTED, null, trail);
    }

    /** {@code wait}, raised to what is left of a cooldown ending at {@code until}; null counts as zero. */
    private static Duration atLeast(Duration wait, Instant now, Instant until) {
        Duration w = wait == null ? Duration.ZERO : wait;
        if (until != null && until.isAfter(now.plus(w))) {
            w = Duration.between(now, until);
        }
        return wait == null && until == null ? null : w;
    }

    private void reschedule(JobRun run, Instant now, Instant runAt, String reason, String detail, FailureType whenCapped,
            Instant permitAt, String trail) {
        int updated = write("rescheduling job " + run.label(), false, c -> {
            try (PreparedStatement ps = c.prepareStatement(CoreSql.RESCHEDULE)) {
                Db.bind(ps, Timestamp.from(runAt), reason, cut(detail), Timestamp.from(now),
                        permitAt == null ? null : Timestamp.from(permitAt), trail,
                        run.taskName(), run.id(), run.version(), run.policy().maxReschedules());
                return ps.executeUpdate();
            }
        });
        if (updated > 0) {
            observability.metrics().jobRescheduled(run.taskName(), reason);
        }
        if (updated == 0) {
            // either the cap is reached or the row moved on; the version-checked park tells which
            park(run, now, whenCapped, reason, capClass(whenCapped),
                    "rescheduled " + run.policy().maxReschedules() + " times (maxReschedules); last: " + detail, false,
                    trail);
        }
    }

    private void retry(JobRun run, Instant now, FailureType whenExhausted, String kind, String errorClass,
            String message, Duration floor) {
        retry(run, now, whenExhausted, kind, errorClass, message, floor, NO_TRAIL);
    }

    private void retry(JobRun run, Instant now, FailureType whenExhausted, String kind, String errorClass,
            String message, Duration floor, String trail) {
        int attempts = run.attemptsSpent() + 1;
        String error = errorJson(run.attemptsSpent() + 1, now, kind, errorClass, message);
        if (attempts >= run.policy().maxAttempts()) {
            parkWithError(run, whenExhausted, errorClass,
                    message + " (attempt " + attempts + " of " + run.policy().maxAttempts() + ")", attempts, error, trail);
            return;
        }
        // a lost worker's job runs again at once: the wait for its missed heartbeats was its backoff
        Duration delay = kind.equals(WORKER_LOST) ? Duration.ZERO
                : Backoff.fullJitter(run.policy().backoffBase(), run.policy().backoffCap(), attempts);
        if (floor != null && delay.compareTo(floor) < 0) {
            delay = floor;
        }
        Instant runAt = now.plus(delay);
        int updated = write("retrying job " + run.label(), false, c -> {
            try (PreparedStatement ps = c.prepareStatement(CoreSql.RETRY)) {
                Db.bind(ps, Timestamp.from(runAt), attempts, Timestamp.from(now), error, trail,
                        run.taskName(), run.id(), run.version());
                return ps.executeUpdate();
            }
        });
        if (updated == 0) {
            LOG.debug("Job {} changed while it ran; its retry was not written", run.label());
        } else {
            observability.metrics().jobRetried(run.taskName(), kind);
        }
    }

    private void park(JobRun run, Instant now, FailureType type, String kind, String errorClass, String message,
            boolean spendsAttempt, String trail) {
        int attempts = run.attemptsSpent() + (spendsAttempt ? 1 : 0);
        parkWithError(run, type, errorClass, message, attempts,
                errorJson(run.attemptsSpent() + 1, now, kind, errorClass, message), trail);
    }

    private void parkWithError(JobRun run, FailureType type, String errorClass, String message, int attempts,
            String error, String trail) {
        String msg = cut(message);
        Parked p = parkRow("parking job " + run.label(), run, true, "parked", type, errorClass, msg, error, attempts,
                trail, type != FailureType.BREAKER_OPEN);
        if (p == null) {
            LOG.debug("Job {} changed while it ran; it was not parked", run.label());
        } else {
            LOG.info("Parked job {} as {} (dead letter {}, provider key {}): {}", run.label(), type.code(),
                    p.deadLetter(), p.providerKey(), msg);
            observability.metrics().jobParked(run.taskName(), type.code());
        }
    }

    private record Parked(long deadLetter, String providerKey) {}

    /**
     * The one write that moves a job to its dead letter ({@link CoreSql#PARK}), for a park and for
     * a cancel: the row deleted, the dead letter written or updated, the history row.
     *
     * @param mayBePicked whether a picked row may be moved (the engine, for the job it runs)
     * @param outcome the history outcome, {@code parked} or {@code cancelled}
     * @param attempts the attempts to record, or null for the row's own
     * @param reviewIfSweep whether a sweep replay that ends here goes to review
     * @return the dead letter, or null when the row changed meanwhile (nothing written)
     */
    private Parked parkRow(String what, JobRun run, boolean mayBePicked, String outcome, FailureType type,
            String errorClass, String msg, String error, Integer attempts, String trail, boolean reviewIfSweep) {
        RunTiming t = run.timing() == null ? RunTiming.NONE : run.timing();
        return write(what, true, c -> {
            try (PreparedStatement ps = c.prepareStatement(CoreSql.PARK)) {
                Db.bind(ps, run.taskName(), run.id(), run.version(), mayBePicked,
                        reviewIfSweep, type.code(), errorClass, msg, error, attempts, trail,
                        type.code(), errorClass, msg, error, attempts, trail,
                        outcome, type.code(), msg, attempts, t.startedAtText(), t.durationMs(), trail,
                        observability.historyArgs(), observability.history());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    long moved = rs.getLong("moved");
                    long id = rs.getLong("dead_letter_id");
                    boolean hasId = !rs.wasNull();
                    if (moved == 1 && hasId) {
                        return new Parked(id, rs.getString("provider_key"));
                    }
                    if (moved == 1) {
                        LOG.error("Job {} was not moved to a dead letter: none could be written; left in place",
                                run.label());
                    }
                    throw Db.Rollback.now();
                }
            }
        });
    }

    /**
     * A job whose handler returned done: counted, and handed to the batch completer, which
     * deletes it and writes its history row (with this run's start, duration and fallback trail).
     */
    private void completed(JobRun run, String trail) {
        observability.metrics().jobCompleted(run.taskName());
        if (!observability.history()) {
            completer.complete(run.taskName(), run.id(), run.version());
            return;
        }
        RunTiming t = run.timing() == null ? RunTiming.NONE : run.timing();
        completer.complete(new BatchCompleter.Done(run.taskName(), run.id(), run.version(), t.startedAtText(),
                t.durationMs(), trail == null || trail.equals(NO_TRAIL) ? null : trail));
    }

    private int reschedulesOf(JobRun run) {
        return write("reading job " + run.label(), false, c -> {
            try (PreparedStatement ps = c.prepareStatement(CoreSql.JOB_EXTRAS)) {
                Db.bind(ps, run.taskName(), run.id());
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getInt("reschedules") : 0;
                }
            }
        });
    }

    private String errorJson(int attempt, Instant at, String kind, String errorClass, String message) {
        ObjectNode n = json.createObjectNode();
        n.put("attempt", attempt);
        n.put("at", at.toString());
        n.put("kind", kind);
        n.put("error_class", errorClass);
        n.put("message", cut(message));
        return n.toString();
    }

    private static String capClass(FailureType t) {
        return switch (t) {
            case SNOOZE_EXHAUSTED -> "SnoozeLimit";
            case QUOTA_EXHAUSTED -> "QuotaExhausted";
            default -> "RateLimited";
        };
    }

    static String className(Throwable t, String fallback) {
        return t == null ? fallback : t.getClass().getName();
    }

    static String message(String reason, Throwable cause) {
        if (cause == null) {
            return reason == null ? "failed" : reason;
        }
        String m = safeMessage(cause);
        if (reason != null && m != null && !reason.contains(m)) {
            return reason + ": " + m;
        }
        return reason != null ? reason : (m != null ? m : cause.getClass().getName());
    }

    /**
     * The message of {@code t}, or a description when its {@code getMessage()} itself throws; never
     * throws (handlers and SDKs throw exceptions of every shape).
     */
    static String safeMessage(Throwable t) {
        if (t == null) {
            return null;
        }
        try {
            return t.getMessage();
        } catch (Throwable e) {
            return "(getMessage() of " + t.getClass().getName() + " threw " + e.getClass().getName() + ")";
        }
    }

    /** {@code ClassName: message} of {@code t}, cut, for a log line; never throws. */
    static String describe(Throwable t) {
        String m = safeMessage(t);
        return cut(m == null ? t.getClass().getName() : t.getClass().getName() + ": " + m);
    }

    /**
     * A text as stored: at most {@link #MAX_MESSAGE} characters (the last one an ellipsis when
     * cut), never a split surrogate pair, and NUL characters (which Postgres text and jsonb
     * refuse) replaced by U+FFFD, so that no message can fail the write that records it.
     */
    static String cut(String s) {
        if (s == null) {
            return null;
        }
        String c = s;
        if (c.length() > MAX_MESSAGE) {
            int end = MAX_MESSAGE - 1;
            if (Character.isHighSurrogate(c.charAt(end - 1))) {
                end--;
            }
            c = c.substring(0, end) + "…";
        }
        return clean(c);
    }

    /** Replaces NUL and unpaired surrogates by U+FFFD; returns {@code s} itself when there are none. */
    static String clean(String s) {
        StringBuilder b = null;
        int n = s.length();
        for (int i = 0; i < n; i++) {
            char ch = s.charAt(i);
            boolean bad;
            if (ch == 0) {
                bad = true;
            } else if (Character.isHighSurrogate(ch)) {
                bad = i + 1 >= n || !Character.isLowSurrogate(s.charAt(i + 1));
                if (!bad) {
                    if (b != null) {
                        b.append(ch).append(s.charAt(i + 1));
                    }
                    i++;
                    continue;
                }
            } else {
                bad = Character.isLowSurrogate(ch);
            }
            if (bad && b == null) {
                b = new StringBuilder(n).append(s, 0, i);
            }
            if (b != null) {
                b.append(bad ? '\uFFFD' : ch);
            }
        }
        return b == null ? s : b.toString();
    }

    /**
     * A fallback trail as stored: NUL escapes (refused by jsonb) in its texts replaced.
     * The trail is Jackson's output, so the escape only appears inside strings.
     */
    private String cleanTrail(String trail) {
        if (trail == null || !trail.contains("\\u0000")) {
            return trail;
        }
        try {
            com.fasterxml.jackson.databind.JsonNode tree = json.readTree(trail);
            return json.writeValueAsString(cleanNode(tree));
        } catch (Exception e) {
            return NO_TRAIL;
        }
    }

    private com.fasterxml.jackson.databind.JsonNode cleanNode(com.fasterxml.jackson.databind.JsonNode n) {
        if (n.isTextual()) {
            return json.getNodeFactory().textNode(clean(n.asText()));
        }
        if (n instanceof ObjectNode o) {
            var names = new java.util.ArrayList<String>();
            o.fieldNames().forEachRemaining(names::add);
            for (String f : names) {
                o.set(f, cleanNode(o.get(f)));
            }
        } else if (n instanceof com.fasterxml.jackson.databind.node.ArrayNode a) {
            for (int i = 0; i < a.size(); i++) {
                a.set(i, cleanNode(a.get(i)));
            }
        }
        return n;
    }

    // ---- admission and control (docs/admission-and-control.md) ----------------------------------

    /** The delay of a hold for a concurrency slot: full jitter over base * 2^holds, up to the cap. */
    static final Duration HOLD_BASE = Duration.ofMillis(100);
    static final Duration HOLD_CAP = Duration.ofSeconds(2);

    /**
     * No concurrency slot was free: the job is held a little ({@link CoreSql#HOLD}), without an
     * attempt and without counting as a reschedule (a busy limit never parks a job).
     */
    void hold(JobRun run, String reason, String detail) {
        guard(run, () -> {
            Instant now = clock.instant();
            int updated = write("holding job " + run.label(), false, c -> {
                try (PreparedStatement ps = c.prepareStatement(CoreSql.HOLD)) {
                    Db.bind(ps, Timestamp.from(now), HOLD_CAP.toNanos() / 1e9, HOLD_BASE.toNanos() / 1e9, reason,
                            cut(detail), run.taskName(), run.id(), run.version());
                    return ps.executeUpdate();
                }
            });
            if (updated > 0) {
                observability.metrics().jobRescheduled(run.taskName(), reason);
            } else {
                LOG.debug("Job {} changed while it was picked; its hold was not written", run.label());
            }
        });
    }

    /**
     * A job picked while a pause covers it: held without running until the pause ends
     * ({@link CoreSql#HOLD_PAUSED}); when the pause ended meanwhile it runs again at once.
     *
     * @param keys the job's provider key and limit keys (what a key pause may name)
     * @param limitKeys its limit keys, stored when the row has none yet (a replayed job)
     */
    void holdPaused(JobRun run, java.util.List<String> keys, java.util.List<String> limitKeys, String detail) {
        guard(run, () -> {
            Instant now = clock.instant();
            Boolean held = write("holding paused job " + run.label(), false, c -> {
                try (PreparedStatement ps = c.prepareStatement(CoreSql.HOLD_PAUSED)) {
                    Db.bind(ps, run.taskName(), c.createArrayOf("text", keys.toArray()), Timestamp.from(now),
                            Timestamp.from(now), limitKeys.isEmpty() ? null : c.createArrayOf("text", limitKeys.toArray()),
                            cut(detail), run.taskName(), run.id(), run.version());
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? rs.getBoolean(1) : null;
                    }
                }
            });
            if (held == null) {
                LOG.debug("Job {} changed while it was picked; its pause hold was not written", run.label());
            } else if (held) {
                observability.metrics().jobRescheduled(run.taskName(), "paused");
            }
        });
    }

    /**
     * Cancels a job ({@link CoreSql#PARK}, failure type and outcome {@code cancelled}): its row deleted, a dead letter {@code cancelled}
     * recording who and why, and its history row (outcome {@code cancelled}), in one statement.
     *
     * @param run the job as read (or as picked, when {@code running})
     * @param running whether the caller runs it (a picked row may then be cancelled)
     * @param by who cancelled it
     * @param reason why, or null
     * @return the dead letter's id, or null when the row changed meanwhile (nothing written)
     */
    Long cancel(JobRun run, boolean running, String by, String reason) {
        Instant now = clock.instant();
        String msg = cut("cancelled by " + by + (reason == null || reason.isBlank() ? "" : ": " + reason));
        ObjectNode e = json.createObjectNode();
        e.put("attempt", run.attemptsSpent() + 1);
        e.put("at", now.toString());
        e.put("kind", "cancelled");
        e.put("error_class", "Cancelled");
        e.put("message", msg);
        e.put("by", cut(by));
        String error = e.toString();
        Parked p = parkRow("cancelling job " + run.label(), run, running, "cancelled", FailureType.CANCELLED,
                "Cancelled", msg, error, null, null, false);
        Long deadLetter = p == null ? null : p.deadLetter();
        if (deadLetter != null) {
            LOG.info("Cancelled job {} (dead letter {}): {}", run.label(), deadLetter, msg);
            observability.metrics().jobCancelled(run.taskName());
        }
        return deadLetter;
    }

    /**
     * A run whose job was asked to stop while it ran and did not finish (any outcome but done):
     * the provider state learns what the call taught, then the job is cancelled instead of being
     * rescheduled or retried.
     */
    void cancelledWhileRunning(JobRun run, Outcome outcome, ProviderRun pr, String by, String reason) {
        guard(run, () -> {
            if (pr != null && pr.providerKey() != null) {
                gate.afterCall(pr.providerKey(), pr.trialToken(), outcome);
            }
            if (cancel(run, true, by, reason) == null) {
                LOG.debug("Job {} changed while it ran; it was not cancelled", run.label());
            }
        });
    }
}
