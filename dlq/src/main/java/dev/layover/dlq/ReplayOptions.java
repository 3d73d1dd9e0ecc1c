package dev.layover.dlq;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * How to replay: who, why, which kind, when the new jobs run, optionally with edited args (one
 * dead letter only), and how a bulk run goes.
 *
 * <pre>{@code
 * deadLetters.replay(42, ReplayOptions.by("alice").note("prompt fixed").args("{\"doc\":\"d-1\",\"lang\":\"fr\"}"));
 * deadLetters.replay(Selection.matching(filter), ReplayOptions.by("alice").onProgress(p -> log(p)));
 * deadLetters.replay(Selection.ids(ids), ReplayOptions.by("recovery-sweep").kind(ReplayKind.SWEEP)
 *         .spreadOver(Duration.ofSeconds(30)).replayBudget(3));
 * }</pre>
 *
 * <p>Immutable. Defaults: kind {@link ReplayKind#MANUAL}; no note; the stored args; run now
 * (database time), no spread; automatic replay budget {@value #DEFAULT_REPLAY_BUDGET} (sweep
 * only); no limit; {@value #DEFAULT_BATCH_SIZE} dead letters per transaction; no progress callback;
 * the replayed job resumes from its stored steps (not {@link #fromScratch()}).
 */
public final class ReplayOptions {

    /** Dead letters per transaction in bulk actions, unless set. */
    public static final int DEFAULT_BATCH_SIZE = 500;
    /** Sweep replays one dead letter may spend before it is moved to review, unless set. */
    public static final int DEFAULT_REPLAY_BUDGET = 3;

    private final String actor;
    private final String note;
    private final ReplayKind kind;
    private final String args;
    private final Instant runAt;
    private final Duration spread;
    private final int replayBudget;
    private final long limit;
    private final int batchSize;
    private final Consumer<BulkProgress> progress;
    private final boolean fromScratch;

    private ReplayOptions(String actor, String note, ReplayKind kind, String args, Instant runAt, Duration spread,
            int replayBudget, long limit, int batchSize, Consumer<BulkProgress> progress) {
        this(actor, note, kind, args, runAt, spread, replayBudget, limit, batchSize, progress, false);
    }

    private ReplayOptions(String actor, String note, ReplayKind kind, String args, Instant runAt, Duration spread,
            int replayBudget, long limit, int batchSize, Consumer<BulkProgress> progress, boolean fromScratch) {
        this.fromScratch = fromScratch;
        this.actor = actor;
        this.note = note;
        this.kind = kind;
        this.args = args;
        this.runAt = runAt;
        this.spread = spread;
        this.replayBudget = replayBudget;
        this.limit = limit;
        this.batchSize = batchSize;
        this.progress = progress;
    }

    /**
     * @param actor who replays (recorded in the dead letter's history and the audit log): a person's
     *     name, or a plugin's such as {@code recovery-sweep}; 1-200 characters
     * @return options with every default
     */
    public static ReplayOptions by(String actor) {
        return new ReplayOptions(checkActor(actor), null, ReplayKind.MANUAL, null, null, Duration.ZERO,
                DEFAULT_REPLAY_BUDGET, Long.MAX_VALUE, DEFAULT_BATCH_SIZE, null);
    }

    /**
     * @param note why, recorded in the audit log; at most 2,000 characters
     * @return new options
     */
    public ReplayOptions note(String note) {
        return new ReplayOptions(actor, checkNote(note), kind, args, runAt, spread, replayBudget, limit, batchSize,
                progress, fromScratch);
    }

    /**
     * @param kind manual (default), sweep or trial; see {@link ReplayKind}
     * @return new options
     */
    public ReplayOptions kind(ReplayKind kind) {
        return new ReplayOptions(actor, note, Objects.requireNonNull(kind, "kind"), args, runAt, spread, replayBudget,
                limit, batchSize, progress, fromScratch);
    }

    /**
     * Replays with edited args (one dead letter only). They are validated against the job type
     * ({@code Layover.validateArgs}): invalid args fail the replay with an
     * {@link dev.layover.core.InvalidArgsException} and change nothing. The dead letter's args become
     * the edited ones; the audit log keeps both.
     *
     * @param json the new args as JSON
     * @return new options
     */
    public ReplayOptions args(String json) {
        return new ReplayOptions(actor, note, kind, Objects.requireNonNull(json, "args"), runAt, spread, replayBudget,
                limit, batchSize, progress, fromScratch);
    }

    /**
     * @param when when the new jobs are due; default now (database time)
     * @return new options
     */
    public ReplayOptions runAt(Instant when) {
        return new ReplayOptions(actor, note, kind, args, Objects.requireNonNull(when, "when"), spread, replayBudget,
                limit, batchSize, progress, fromScratch);
    }

    /**
     * Spreads the new jobs' run times uniformly over {@code [runAt, runAt + spread)}, so that a large
     * replay does not hit a provider all at once.
     *
     * @param spread zero (default) or more
     * @return new options
     */
    public ReplayOptions spreadOver(Duration spread) {
        if (spread == null || spread.isNegative()) {
            throw new IllegalArgumentException("spread must be zero or more");
        }
        return new ReplayOptions(actor, note, kind, args, runAt, spread, replayBudget, limit, batchSize, progress,
                fromScratch);
    }

    /**
     * @param budget sweep replays a dead letter may spend (counted in {@code auto_replay_count});
     *     a sweep that finds it spent moves the dead letter to {@code review}. Default
     *     {@value #DEFAULT_REPLAY_BUDGET}; ignored by other kinds.
     * @return new options
     */
    public ReplayOptions replayBudget(int budget) {
        if (budget < 1) {
            throw new IllegalArgumentException("replay budget must be at least 1, was " + budget);
        }
        return new ReplayOptions(actor, note, kind, args, runAt, spread, budget, limit, batchSize, progress,
                fromScratch);
    }

    /**
     * @param max bulk only: stop after this many replays (the sweep's growing batches); default no limit
     * @return new options
     */
    public ReplayOptions limit(long max) {
        if (max < 1) {
            throw new IllegalArgumentException("limit must be at least 1, was " + max);
        }
        return new ReplayOptions(actor, note, kind, args, runAt, spread, replayBudget, max, batchSize, progress,
                fromScratch);
    }

    /**
     * @param n bulk only: dead letters per transaction, 1-5,000; default {@value #DEFAULT_BATCH_SIZE}
     * @return new options
     */
    public ReplayOptions batchSize(int n) {
        return new ReplayOptions(actor, note, kind, args, runAt, spread, replayBudget, limit, checkBatch(n), progress,
                fromScratch);
    }

    /**
     * @param callback bulk only: called on the caller's thread after each committed batch; an exception
     *     it throws stops the run (committed batches stay)
     * @return new options
     */
    public ReplayOptions onProgress(Consumer<BulkProgress> callback) {
        return new ReplayOptions(actor, note, kind, args, runAt, spread, replayBudget, limit, batchSize,
                Objects.requireNonNull(callback, "callback"), fromScratch);
    }

    /**
     * Replays from scratch: the job's stored steps ({@code layover.job_steps}, see
     * {@code docs/steps.md}) are dropped in the replay's transaction ({@code layover.forget_steps}),
     * so every step runs again. By default a replay resumes: the replayed job (same type and id)
     * reuses the steps its parked run finished. A replay with edited {@link #args(String)} is always
     * from scratch (steps made from the old args would not match).
     *
     * @return new options
     */
    public ReplayOptions fromScratch() {
        return new ReplayOptions(actor, note, kind, args, runAt, spread, replayBudget, limit, batchSize, progress, true);
    }

    /** @return whether the replay drops the job's stored steps ({@link #fromScratch()}, or edited args) */
    public boolean isFromScratch() {
        return fromScratch || args != null;
    }

    /** @return who replays */
    public String actor() {
        return actor;
    }

    /** @return the note, or {@code null} */
    public String note() {
        return note;
    }

    /** @return the kind */
    public ReplayKind kind() {
        return kind;
    }

    /** @return the edited args, or {@code null} for the stored ones */
    public String args() {
        return args;
    }

    /** @return when the jobs are due, or {@code null} for now */
    public Instant runAt() {
        return runAt;
    }

    /** @return the spread of run times */
    public Duration spread() {
        return spread;
    }

    /** @return the automatic replay budget */
    public int replayBudget() {
        return replayBudget;
    }

    /** @return the most replays a bulk run makes ({@code Long.MAX_VALUE}: no limit) */
    public long limit() {
        return limit;
    }

    /** @return dead letters per transaction */
    public int batchSize() {
        return batchSize;
    }

    /** @return the progress callback, or {@code null} */
    public Consumer<BulkProgress> progress() {
        return progress;
    }

    static String checkActor(String actor) {
        if (actor == null || actor.isBlank() || actor.length() > 200) {
            throw new IllegalArgumentException("say who acts: a name of 1-200 characters, got: " + actor);
        }
        return actor;
    }

    static String checkNote(String note) {
        if (note != null && note.length() > 2000) {
            throw new IllegalArgumentException("note is longer than 2000 characters");
        }
        return note;
    }

    static int checkBatch(int n) {
        if (n < 1 || n > 5000) {
            throw new IllegalArgumentException("batch size must be 1-5000, was " + n);
        }
        return n;
    }
}
