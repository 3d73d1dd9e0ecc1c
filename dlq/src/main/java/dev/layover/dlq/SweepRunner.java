package dev.layover.dlq;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.LayoverException;
import dev.layover.core.UnknownJobTypeException;
import dev.layover.core.spi.Db;
import dev.layover.core.spi.JobWrites;
import dev.layover.core.outcome.FailureType;
import dev.layover.core.provider.state.BreakerState;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Layover instance's runner of the {@link RecoverySweep}: {@link #runOnce()} is the body of the
 * recurring task. Every decision uses the database's clock, and the state it carries from one run
 * to the next is in {@code layover.recovery_state}, so whichever worker runs it next goes on where
 * the last one stopped.
 */
final class SweepRunner {

    private static final Logger LOG = LoggerFactory.getLogger(RecoverySweep.class);

    static final String IDLE = "idle";
    static final String SWEEPING = "sweeping";
    static final String WAITING = "waiting";
    static final String SLOWED = "slowed";
    static final String BREAKER_OPEN = "breaker_open";

    private final RecoverySweep settings;
    private final Layover layover;
    private final DeadLetters deadLetters;
    private final Db db;
    private final String worker;
    /** Per auto-replayable failure type, the registered job types it is auto-replayable for. */
    private final Map<FailureType, String[]> jobTypesByFailure;
    /** Whether the last run could not read the keys (logged once per outage). */
    private volatile boolean readFailing;

    SweepRunner(RecoverySweep settings, Layover layover) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.layover = Objects.requireNonNull(layover, "layover");
        this.deadLetters = DeadLetters.create(layover);
        this.db = new Db(layover.dataSource());
        this.worker = workerName();
        Map<FailureType, List<String>> byFailure = new EnumMap<>(FailureType.class);
        for (JobType<?> t : layover.jobTypes()) {
            for (FailureType f : settings.autoReplayable(t.name())) {
                byFailure.computeIfAbsent(f, x -> new ArrayList<>()).add(t.name());
            }
        }
        Map<FailureType, String[]> out = new EnumMap<>(FailureType.class);
        byFailure.forEach((f, types) -> out.put(f, types.toArray(String[]::new)));
        this.jobTypesByFailure = out;
    }

    /** Subscribes to the instance's breaker events: a close (here or heard by NOTIFY) runs the sweep at once. */
    void listen() {
        layover.providerStates().addListener(e -> {
            if (e.to() == BreakerState.CLOSED && layover.isRunning()) {
                try {
                    int n = JobWrites.on(layover.dataSource()).nudgeRecurring(RecoverySweep.TASK_NAME);
                    if (n > 0) {
                        layover.wakeUp();
                    }
                } catch (RuntimeException ex) {
                    LOG.debug("Could not bring the recovery sweep forward after the close of {}: {}", e.providerKey(),
                            ex.toString());
                }
            }
        });
    }

    /** What one run did. */
    record Cycle(int keys, int batches, long replayed, long movedToReview, int trials) {}

    /**
     * One run over every provider key with parked dead letters. A failure on one key is logged and
     * does not stop the others.
     *
     * @return what was done
     */
    Cycle runOnce() {
        if (jobTypesByFailure.isEmpty()) {
            return new Cycle(0, 0, 0, 0, 0);
        }
        List<Key> keys;
        try {
            keys = db.autocommit("reading provider keys for the recovery sweep", c -> {
                List<Key> out = new ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement(DlqSql.RECOVERY_KEYS);
                        ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(Key.read(rs, settings.firstBatch()));
                    }
                }
                return out;
            });
        } catch (LayoverException e) {
            if (!readFailing) {
                LOG.warn("Recovery sweep: cannot read the provider keys ({}); trying again every {}", e.getMessage(),
                        settings.checkEvery());
            }
            readFailing = true;
            return new Cycle(0, 0, 0, 0, 0);
        }
        if (readFailing) {
            LOG.info("Recovery sweep: reading the provider keys works again");
            readFailing = false;
        }
        Tally t = new Tally();
        for (Key k : keys) {
            try {
                step(k, t);
            } catch (RuntimeException e) {
                LOG.warn("Recovery sweep {}: this run failed ({}); the next run tries again", k.providerKey, e.toString(),
                        e);
            }
        }
        return new Cycle(keys.size(), t.batches, t.replayed, t.movedToReview, t.trials);
    }

    /** Running totals of one run. */
    private static final class Tally {
        int batches;
        long replayed;
        long movedToReview;
        int trials;
    }

    private void step(Key k, Tally t) {
        State s = k.state.copy();
        if (k.newTrialPeriod || !k.hasState) {
            s.trials = 0;
            s.trialsSince = k.closedAt;
            s.nextTrialAt = null;
        }
        if (k.breaker == BreakerState.CLOSED) {
            if (k.newClose) {
                startSweep(k, s);
            } else if (BREAKER_OPEN.equals(s.phase)) {
                s.phase = IDLE;
                s.note = "breaker closed";
            }
            sweepStep(k, s, t);
        } else {
            if (!IDLE.equals(s.phase) && !BREAKER_OPEN.equals(s.phase)) {
                LOG.info("Recovery sweep {}: the breaker is {} again; sweep stopped after {} replays in {} batches "
                        + "({} parked again); the next close starts over", k.providerKey, k.breaker.code(), s.replayed,
                        s.batches, s.parkedAgain);
            }
            s.phase = BREAKER_OPEN;
            trialStep(k, s, t);
        }
        if (!s.equals(k.state) || !k.hasState) {
            save(k.providerKey, s);
        }
    }

    // ------------------------------------------------------------------------------------ sweep

    private void startSweep(Key k, State s) {
        s.handledClosedAt = k.closedAt;
        s.cutoff = k.closedAt.plus(settings.closeGrace());
        s.episodeStartedAt = k.now;
        s.batchSize = settings.firstBatch();
        s.batches = 0;
        s.replayed = 0;
        s.movedToReview = 0;
        s.parkedAgain = 0;
        s.lastBatchAt = null;
        s.lastBatchCount = null;
        s.lastBatchFirstId = null;
        s.lastBatchLastId = null;
        s.nextBatchAt = null;
        s.checkedAt = k.now;
        s.phase = IDLE;
        s.note = "breaker closed at " + k.closedAt + "; sweeping what parked up to " + s.cutoff;
        LOG.info("Recovery sweep {}: breaker closed at {}; replaying its parked dead letters (parked up to {}) in "
                + "batches from {}", k.providerKey, k.closedAt, s.cutoff, settings.firstBatch());
    }

    private void sweepStep(Key k, State s, Tally t) {
        Instant now = k.now;
        boolean running = SWEEPING.equals(s.phase) || WAITING.equals(s.phase) || SLOWED.equals(s.phase);
        if (k.cooldownUntil != null) {
            if (running) {
                s.phase = WAITING;
                s.note = "the key cools down until " + k.cooldownUntil;
            }
            return;
        }
        if (s.nextBatchAt != null && now.isBefore(s.nextBatchAt)) {
            return;
        }
        int size = running ? s.batchSize : settings.firstBatch();
        if (running && s.lastBatchAt != null) {
            Health h = health(k.providerKey, s.checkedAt != null ? s.checkedAt : s.lastBatchAt);
            s.checkedAt = now;
            s.parkedAgain += h.parkedAgain;
            long failing = h.parkedAgain + h.retrying;
            int last = s.lastBatchCount == null ? 0 : s.lastBatchCount;
            if (failing > 0 && failing >= Math.max(1, Math.ceil(last * RecoverySweep.SLOW_DOWN_RATIO))) {
                int smaller = Math.max(1, Math.min(s.batchSize, last) / 2);
                LOG.info("Recovery sweep {}: {} of its replays failed again ({} parked again, {} retrying); batch size "
                        + "{} -> {}, next batch in {}", k.providerKey, failing, h.parkedAgain, h.retrying, s.batchSize,
                        smaller, settings.spread());
                s.batchSize = smaller;
                s.nextBatchAt = now.plus(settings.spread());
                s.phase = SLOWED;
                s.note = failing + " replays failed again (" + h.parkedAgain + " parked again, " + h.retrying
                        + " retrying); batch size cut to " + smaller;
                return;
            }
            if (h.pending > Math.max(1, last / 2)) {
                s.phase = WAITING;
                s.note = h.pending + " jobs of the last batches have not run yet";
                return;
            }
            if (failing == 0 && !SLOWED.equals(s.phase) && last >= s.batchSize) {
                size = settings.grow(s.batchSize);
            } else {
                size = s.batchSize;
            }
        }
        List<Candidate> batch = candidates(k.providerKey, 0, s.cutoff, settings.rateLimitMinAge(),
                settings.quotaMinAge(), size);
        if (batch.isEmpty()) {
            if (running) {
                LOG.info("Recovery sweep {}: done; {} replayed in {} batches, {} moved to review (budget spent), {} "
                        + "parked again", k.providerKey, s.replayed, s.batches, s.movedToReview, s.parkedAgain);
                s.phase = IDLE;
                s.note = "done: " + s.replayed + " replayed in " + s.batches + " batches";
            }
            return;
        }
        Instant runAt = now;
        if (s.handledClosedAt != null && runAt.isBefore(s.handledClosedAt.plus(RecoverySweep.SETTLE))) {
            runAt = s.handledClosedAt.plus(RecoverySweep.SETTLE);
        }
        List<Long> ids = batch.stream().map(Candidate::id).toList();
        int number = s.batches + 1;
        String why = s.cutoff != null && s.handledClosedAt != null
                ? "breaker of " + k.providerKey + " closed at " + s.handledClosedAt
                : "cooldown of " + k.providerKey + " over";
        BulkResult r = deadLetters.replay(Selection.ids(ids), ReplayOptions.by(RecoverySweep.ACTOR)
                .kind(ReplayKind.SWEEP)
                .runAt(runAt)
                .spreadOver(settings.spread())
                .replayBudget(settings.replayBudget())
                .batchSize(Math.max(1, Math.min(5000, ids.size())))
                .note("recovery sweep: " + why + "; batch " + number + " of up to " + size));
        nameSubject(r.auditId(), k.providerKey);
        long first = ids.get(0);
        long lastId = ids.get(ids.size() - 1);
        LOG.info("Recovery sweep {}: batch {} replayed {} of {} dead letters (ids {}..{}), due from {} spread over {}; "
                + "{} moved to review (budget spent), {} skipped", k.providerKey, number, r.changed(), ids.size(), first,
                lastId, runAt, settings.spread(), r.movedToReview(), r.skippedTotal());
        t.batches++;
        t.replayed += r.changed();
        t.movedToReview += r.movedToReview();
        s.batches = number;
        s.replayed += r.changed();
        s.movedToReview += r.movedToReview();
        s.batchSize = size;
        s.lastBatchAt = now;
        s.lastBatchCount = (int) r.changed();
        s.lastBatchFirstId = first;
        s.lastBatchLastId = lastId;
        s.nextBatchAt = runAt.plus(settings.spread());
        s.checkedAt = now;
        s.phase = SWEEPING;
        s.note = "batch " + number + ": " + r.changed() + " replayed (ids " + first + ".." + lastId + ")";
    }

    /** How the sweep's replays of a key are doing. */
    private record Health(long pending, long retrying, long parkedAgain) {}

    private Health health(String key, Instant since) {
        return db.autocommit("reading the recovery sweep's progress", c -> {
            try (PreparedStatement ps = c.prepareStatement(DlqSql.RECOVERY_HEALTH)) {
                DlqSql.bind(c, ps, key, since, key);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new Health(rs.getLong("pending"), rs.getLong("retrying"), rs.getLong("parked_again"));
                }
            }
        });
    }

    // ------------------------------------------------------------------------------------ trial

    private void trialStep(Key k, State s, Tally t) {
        if (!settings.trials()) {
            s.note = "breaker " + k.breaker.code() + "; trials are off";
            return;
        }
        if (k.heldOpen) {
            s.note = "breaker held open by an operator: no trial";
            return;
        }
        if (k.trialInFlight) {
            s.note = "breaker half-open: a trial call is in flight";
            return;
        }
        Instant now = k.now;
        if (s.nextTrialAt != null && now.isBefore(s.nextTrialAt)) {
            return;
        }
        Instant openUntil = k.openUntil == null ? now : k.openUntil;
        Instant runAt = (openUntil.isAfter(now) ? openUntil : now).plus(RecoverySweep.TRIAL_MARGIN);
        Duration interval = settings.trialInterval(s.trials);
        if (traffic(k.providerKey, runAt.plus(interval))) {
            s.note = "breaker " + k.breaker.code() + "; live jobs of the key will make the trial call";
            return;
        }
        long after = s.lastTrialDeadLetterId == null ? 0 : s.lastTrialDeadLetterId;
        List<Candidate> next = candidates(k.providerKey, after, now, null, null, 1);
        if (next.isEmpty() && after > 0) {
            next = candidates(k.providerKey, 0, now, null, null, 1);
        }
        if (next.isEmpty()) {
            s.note = "breaker " + k.breaker.code() + "; nothing parked to make a trial with";
            return;
        }
        Candidate c = next.get(0);
        int number = s.trials + 1;
        Replayed r;
        try {
            r = deadLetters.replay(c.id(), ReplayOptions.by(RecoverySweep.ACTOR)
                    .kind(ReplayKind.TRIAL)
                    .runAt(runAt)
                    .note("recovery trial " + number + " of " + k.providerKey + ": the breaker is " + k.breaker.code()
                            + " and no job of the key is coming"));
        } catch (ReplayConflictException | UnknownJobTypeException | DeadLetterNotFoundException e) {
            LOG.debug("Recovery trial {}: dead letter {} could not be replayed ({}); the next run takes another",
                    k.providerKey, c.id(), e.getMessage());
            s.lastTrialDeadLetterId = c.id();
            return;
        }
        nameSubject(r.auditId(), k.providerKey);
        s.trials = number;
        s.lastTrialAt = now;
        s.lastTrialRunAt = r.runAt() != null ? r.runAt() : runAt;
        s.lastTrialDeadLetterId = c.id();
        s.nextTrialAt = s.lastTrialRunAt.plus(interval);
        s.note = "trial " + number + ": dead letter " + c.id() + " due " + s.lastTrialRunAt;
        t.trials++;
        LOG.info("Recovery trial {}: replayed 1 dead letter (id {}, {} {}, {}) as trial {} of this outage, due {}; next "
                + "trial no sooner than {}", k.providerKey, c.id(), c.jobType(), c.jobId(), c.failureType(), number,
                s.lastTrialRunAt, s.nextTrialAt);
    }

    private boolean traffic(String key, Instant before) {
        return db.autocommit("looking for live jobs of " + key, c -> {
            try (PreparedStatement ps = c.prepareStatement(DlqSql.RECOVERY_TRAFFIC)) {
                DlqSql.bind(c, ps, key, before);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getBoolean(1);
                }
            }
        });
    }

    // ------------------------------------------------------------------------------------ statements

    /** A dead letter the sweep or a trial may replay. */
    record Candidate(long id, String jobType, String jobId, String failureType) {}

    /**
     * The oldest (by id) parked dead letters of a key the sweep or a trial may replay.
     *
     * @param key the provider key
     * @param afterId only ids above this
     * @param cutoff dead letters parked up to this qualify (or null)
     * @param rateLimitMinAge rate-limit entries parked at least this long qualify too (or null)
     * @param quotaMinAge quota entries parked at least this long qualify too (or null)
     * @param limit how many at most
     * @return them, in id order
     */
    List<Candidate> candidates(String key, long afterId, Instant cutoff, Duration rateLimitMinAge,
            Duration quotaMinAge, int limit) {
        return db.autocommit("choosing dead letters to replay", c -> {
            List<Candidate> out = new ArrayList<>();
            for (Map.Entry<FailureType, String[]> e : jobTypesByFailure.entrySet()) {
                FailureType f = e.getKey();
                Duration minAge = f == FailureType.RATE_LIMIT_EXHAUSTED ? rateLimitMinAge
                        : f == FailureType.QUOTA_EXHAUSTED ? quotaMinAge : null;
                if (cutoff == null && minAge == null) {
                    continue;
                }
                try (PreparedStatement ps = DlqSql.prepareCustomPlanned(c, DlqSql.RECOVERY_CANDIDATES)) {
                    DlqSql.bind(c, ps, key, f.code(), afterId, new DlqSql.TextArray(e.getValue()), cutoff,
                            minAge == null ? null : minAge.toMillis(), limit);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            out.add(new Candidate(rs.getLong("id"), rs.getString("job_type"), rs.getString("job_id"),
                                    rs.getString("failure_type")));
                        }
                    }
                }
            }
            out.sort(Comparator.comparingLong(Candidate::id));
            return out.size() > limit ? List.copyOf(out.subList(0, limit)) : out;
        });
    }

    private void nameSubject(long auditId, String key) {
        try {
            db.autocommit("writing the audit log", c -> {
                try (PreparedStatement ps = c.prepareStatement(DlqSql.AUDIT_SUBJECT)) {
                    DlqSql.bind(c, ps, key, auditId);
                    return ps.executeUpdate();
                }
            });
        } catch (LayoverException e) {
            LOG.debug("Could not name {} in audit row {}: {}", key, auditId, e.toString());
        }
    }

    private void save(String key, State s) {
        db.autocommit("writing the recovery sweep's state", c -> {
            try (PreparedStatement ps = c.prepareStatement(DlqSql.RECOVERY_SAVE)) {
                DlqSql.bind(c, ps, key, s.phase, s.handledClosedAt, s.cutoff, s.episodeStartedAt, s.batchSize,
                        s.batches, s.replayed, s.movedToReview, s.parkedAgain, s.lastBatchAt, s.lastBatchCount,
                        s.lastBatchFirstId, s.lastBatchLastId, s.nextBatchAt, s.checkedAt, s.trials, s.trialsSince,
                        s.lastTrialAt, s.lastTrialRunAt, s.lastTrialDeadLetterId, s.nextTrialAt, cut(s.note), worker);
                return ps.executeUpdate();
            }
        });
    }

    private static String cut(String s) {
        return s == null || s.length() <= 500 ? s : s.substring(0, 500);
    }

    private static String workerName() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = "unknown-host";
        }
        return host + "#" + ProcessHandle.current().pid();
    }

    // ------------------------------------------------------------------------------------ rows

    /** One provider key as the keys query reads it. */
    private static final class Key {
        String providerKey;
        Instant now;
        BreakerState breaker;
        Instant closedAt;
        Instant openUntil;
        boolean heldOpen;
        boolean trialInFlight;
        boolean newClose;
        boolean newTrialPeriod;
        Instant cooldownUntil;
        boolean hasState;
        State state;

        static Key read(ResultSet rs, int firstBatch) throws SQLException {
            Key k = new Key();
            k.providerKey = rs.getString("provider_key");
            k.now = instant(rs, "db_now");
            BreakerState b = BreakerState.fromCode(rs.getString("breaker_state"));
            k.breaker = b == null ? BreakerState.CLOSED : b;
            k.closedAt = instant(rs, "closed_at");
            k.openUntil = instant(rs, "open_until");
            k.heldOpen = rs.getBoolean("held_open");
            k.trialInFlight = rs.getBoolean("trial_in_flight");
            k.newClose = rs.getBoolean("new_close");
            k.newTrialPeriod = rs.getBoolean("new_trial_period");
            k.cooldownUntil = instant(rs, "cooldown_until");
            k.hasState = rs.getBoolean("has_state");
            State s = new State();
            if (k.hasState) {
                s.phase = rs.getString("phase");
                s.handledClosedAt = instant(rs, "handled_closed_at");
                s.cutoff = instant(rs, "cutoff");
                s.episodeStartedAt = instant(rs, "episode_started_at");
                s.batchSize = rs.getInt("batch_size");
                s.batches = rs.getInt("batches");
                s.replayed = rs.getLong("replayed");
                s.movedToReview = rs.getLong("moved_to_review");
                s.parkedAgain = rs.getLong("parked_again");
                s.lastBatchAt = instant(rs, "last_batch_at");
                s.lastBatchCount = integer(rs, "last_batch_count");
                s.lastBatchFirstId = longOrNull(rs, "last_batch_first_id");
                s.lastBatchLastId = longOrNull(rs, "last_batch_last_id");
                s.nextBatchAt = instant(rs, "next_batch_at");
                s.checkedAt = instant(rs, "checked_at");
                s.trials = rs.getInt("trials");
                s.trialsSince = instant(rs, "trials_since");
                s.lastTrialAt = instant(rs, "last_trial_at");
                s.lastTrialRunAt = instant(rs, "last_trial_run_at");
                s.lastTrialDeadLetterId = longOrNull(rs, "last_trial_dead_letter_id");
                s.nextTrialAt = instant(rs, "next_trial_at");
                s.note = rs.getString("note");
            } else {
                s.phase = IDLE;
                s.batchSize = firstBatch;
            }
            k.state = s;
            return k;
        }
    }

    /** A key's row of {@code layover.recovery_state}. */
    private static final class State {
        String phase;
        Instant handledClosedAt;
        Instant cutoff;
        Instant episodeStartedAt;
        int batchSize;
        int batches;
        long replayed;
        long movedToReview;
        long parkedAgain;
        Instant lastBatchAt;
        Integer lastBatchCount;
        Long lastBatchFirstId;
        Long lastBatchLastId;
        Instant nextBatchAt;
        Instant checkedAt;
        int trials;
        Instant trialsSince;
        Instant lastTrialAt;
        Instant lastTrialRunAt;
        Long lastTrialDeadLetterId;
        Instant nextTrialAt;
        String note;

        State copy() {
            State s = new State();
            s.phase = phase;
            s.handledClosedAt = handledClosedAt;
            s.cutoff = cutoff;
            s.episodeStartedAt = episodeStartedAt;
            s.batchSize = batchSize;
            s.batches = batches;
            s.replayed = replayed;
            s.movedToReview = movedToReview;
            s.parkedAgain = parkedAgain;
            s.lastBatchAt = lastBatchAt;
            s.lastBatchCount = lastBatchCount;
            s.lastBatchFirstId = lastBatchFirstId;
            s.lastBatchLastId = lastBatchLastId;
            s.nextBatchAt = nextBatchAt;
            s.checkedAt = checkedAt;
            s.trials = trials;
            s.trialsSince = trialsSince;
            s.lastTrialAt = lastTrialAt;
            s.lastTrialRunAt = lastTrialRunAt;
            s.lastTrialDeadLetterId = lastTrialDeadLetterId;
            s.nextTrialAt = nextTrialAt;
            s.note = note;
            return s;
        }

        private List<Object> values() {
            List<Object> v = new ArrayList<>();
            v.add(phase);
            v.add(handledClosedAt);
            v.add(cutoff);
            v.add(episodeStartedAt);
            v.add(batchSize);
            v.add(batches);
            v.add(replayed);
            v.add(movedToReview);
            v.add(parkedAgain);
            v.add(lastBatchAt);
            v.add(lastBatchCount);
            v.add(lastBatchFirstId);
            v.add(lastBatchLastId);
            v.add(nextBatchAt);
            v.add(checkedAt);
            v.add(trials);
            v.add(trialsSince);
            v.add(lastTrialAt);
            v.add(lastTrialRunAt);
            v.add(lastTrialDeadLetterId);
            v.add(nextTrialAt);
            v.add(note);
            return v;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof State other && values().equals(other.values());
        }

        @Override
        public int hashCode() {
            return values().hashCode();
        }
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }

    private static Integer integer(ResultSet rs, String column) throws SQLException {
        int v = rs.getInt(column);
        return rs.wasNull() ? null : v;
    }

    private static Long longOrNull(ResultSet rs, String column) throws SQLException {
        long v = rs.getLong(column);
        return rs.wasNull() ? null : v;
    }
}
