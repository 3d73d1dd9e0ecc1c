/**
 * Recurring jobs: a {@link dev.layover.core.schedule.Schedule} (a job type, a
 * {@link dev.layover.core.schedule.Timing}, args, the {@link dev.layover.core.schedule.MissedRuns}
 * and {@link dev.layover.core.schedule.Overlap} policies) registered in code or at run time through
 * {@link dev.layover.core.schedule.Schedules}; stored in {@code layover.schedules}, shown by
 * {@code layover.schedules_view}. See {@code docs/recurring.md}.
 */
package dev.layover.core.schedule;
