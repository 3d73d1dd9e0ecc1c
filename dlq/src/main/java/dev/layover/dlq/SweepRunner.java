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
 * recurring task. It reads each key ({@link SweepKey}), asks the {@link SweepPolicy} what to do,
 * replays through the {@link DeadLetters} store and saves the {@link SweepState}. Every decision
 * uses the database's clock, and the state it carries from one run to the next is in
 * {@code layover.recovery_state}, so whichever worker runs it next goes on where the last one stopped.
 */
final class SweepRunner {

    private static final Logger LOG = LoggerFactory.getLogger(RecoverySweep.class);

    private final RecoverySweep settings;
    private final SweepPolicy policy;
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
        this.policy = new SweepPolicy(settings);
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
        List<SweepKey> keys;
        try {
            keys = db.autocommit("reading provider keys for the recovery sweep", c -> {
                List<SweepKey> out = new ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement(DlqSql.RECOVERY_KEYS);
                        ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(SweepKey.read(rs, settings.firstBatch()));
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
        for (SweepKey k : keys) {
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

    private void step(SweepKey k, Tally t) {
        SweepState s = k.state.copy();
        boolean wasSweeping = !SweepState.IDLE.equals(s.phase) && !SweepState.BREAKER_OPEN.equals(s.phase);
        SweepPolicy.Mode mode = policy.enter(k, s);
        if (mode == SweepPolicy.Mode.SWEEP) {
            if (k.newClose) {
                LOG.info("Recovery sweep {}: breaker closed at {}; replaying its parked dead letters (parked up to {}) "
                        + "in batches from {}", k.providerKey, k.closedAt, s.cutoff, settings.firstBatch());
            }
            sweepStep(k, s, t);
        } else {
            if (wasSweeping) {
                LOG.info("Recovery sweep {}: the breaker is {} again; sweep stopped after {} replays in {} batches "
                        + "({} parked again); the next close starts over", k.providerKey, k.breaker.code(), s.replayed,
                        s.batches, s.parkedAgain);
            }
            trialStep(k, s, t);
        }
        if (!s.equals(k.state) || !k.hasState) {
            save(k.providerKey, s);
        }
    }

    // ------------------------------------------------------------------------------------ sweep

    private void sweepStep(SweepKey k, SweepState s, Tally t) {
        SweepPolicy.Health h = SweepPolicy.needsHealth(k, s) ? health(k.providerKey, SweepPolicy.healthSince(s)) : null;
        SweepPolicy.SweepStep step = policy.nextSweepStep(k, s, h);
        if (step instanceof SweepPolicy.SweepStep.SlowDown d) {
            LOG.info("Recovery sweep {}: {} of its replays failed again ({} parked again, {} retrying); batch size "
                    + "{} -> {}, next batch in {}", k.providerKey, d.failing(), d.parkedAgain(), d.retrying(), d.from(),
                    d.to(), settings.spread());
            return;
        }
        if (!(step instanceof SweepPolicy.SweepStep.Batch b)) {
            return;
        }
        List<Candidate> batch = candidates(k.providerKey, 0, s.cutoff, settings.rateLimitMinAge(),
                settings.quotaMinAge(), b.size());
        if (batch.isEmpty()) {
            if (SweepPolicy.nothingLeft(s)) {
                LOG.info("Recovery sweep {}: done; {} replayed in {} batches, {} moved to review (budget spent), {} "
                        + "parked again", k.providerKey, s.replayed, s.batches, s.movedToReview, s.parkedAgain);
            }
            return;
        }
        List<Long> ids = batch.stream().map(Candidate::id).toList();
        int number = s.batches + 1;
        String why = s.cutoff != null && s.handledClosedAt != null
                ? "breaker of " + k.providerKey + " closed at " + s.handledClosedAt
                : "cooldown of " + k.providerKey + " over";
        BulkResult r = deadLetters.replay(Selection.ids(ids), ReplayOptions.by(RecoverySweep.ACTOR)
                .kind(ReplayKind.SWEEP)
                .runAt(b.runAt())
                .spreadOver(settings.spread())
                .replayBudget(settings.replayBudget())
                .batchSize(Math.max(1, Math.min(5000, ids.size())))
                .note("recovery sweep: " + why + "; batch " + number + " of up to " + b.size()));
        nameSubject(r.auditId(), k.providerKey);
        long first = ids.get(0);
        long lastId = ids.get(ids.size() - 1);
        LOG.info("Recovery sweep {}: batch {} replayed {} of {} dead letters (ids {}..{}), due from {} spread over {}; "
                + "{} moved to review (budget spent), {} skipped", k.providerKey, number, r.changed(), ids.size(), first,
                lastId, b.runAt(), settings.spread(), r.movedToReview(), r.skippedTotal());
        t.batches++;
        t.replayed += r.changed();
        t.movedToReview += r.movedToReview();
        policy.batchReplayed(k, s, b, r.changed(), r.movedToReview(), first, lastId);
    }

    private SweepPolicy.Health health(String key, Instant since) {
        return db.autocommit("reading the recovery sweep's progress", c -> {
            try (PreparedStatement ps = c.prepareStatement(DlqSql.RECOVERY_HEALTH)) {
                DlqSql.bind(c, ps, key, since, key);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new SweepPolicy.Health(rs.getLong("pending"), rs.getLong("retrying"),
                            rs.getLong("parked_again"));
                }
            }
        });
    }

    // ------------------------------------------------------------------------------------ trial

    private void trialStep(SweepKey k, SweepState s, Tally t) {
        SweepPolicy.TrialStep trial = policy.nextTrialStep(k, s);
        if (!trial.replay()) {
            return;
        }
        if (traffic(k.providerKey, trial.runAt().plus(trial.interval()))) {
            s.note = "breaker " + k.breaker.code() + "; live jobs of the key will make the trial call";
            return;
        }
        Instant now = k.now;
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
                    .runAt(trial.runAt())
                    .note("recovery trial " + number + " of " + k.providerKey + ": the breaker is " + k.breaker.code()
                            + " and no job of the key is coming"));
        } catch (ReplayConflictException | UnknownJobTypeException | DeadLetterNotFoundException e) {
            LOG.debug("Recovery trial {}: dead letter {} could not be replayed ({}); the next run takes another",
                    k.providerKey, c.id(), e.getMessage());
            s.lastTrialDeadLetterId = c.id();
            return;
        }
        nameSubject(r.auditId(), k.providerKey);
        SweepPolicy.trialReplayed(k, s, trial, c.id(), r.runAt());
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

    private void save(String key, SweepState s) {
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
}
