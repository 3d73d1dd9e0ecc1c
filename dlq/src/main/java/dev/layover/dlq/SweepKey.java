package dev.layover.dlq;

import dev.layover.core.provider.state.BreakerState;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;

/**
 * One provider key as the recovery sweep's keys query ({@link DlqSql#RECOVERY_KEYS}) reads it: its
 * breaker and cooldown, the database's clock ({@code now}: every decision of the sweep uses it),
 * and the sweep state the last run left.
 */
/** One provider key as the keys query reads it. */
final class SweepKey {
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
    SweepState state;

    static SweepKey read(ResultSet rs, int firstBatch) throws SQLException {
        SweepKey k = new SweepKey();
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
        SweepState s = new SweepState();
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
            s.phase = SweepState.IDLE;
            s.batchSize = firstBatch;
        }
        k.state = s;
        return k;
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
