package dev.layover.core.schedule;

import dev.layover.core.Enqueued;
import java.util.List;
import java.util.Optional;

/**
 * Schedules at run time, stored in {@code layover.schedules} (from {@code Layover#schedules()}).
 * Names are per tenant ({@code "customer-42"}: "every Monday at 9 for customer 42"); tenant
 * {@code ""} is shared with the schedules defined in code. Every call is one transaction on
 * Layover's pool, on the database's clock; bad input throws {@link InvalidScheduleException}
 * before anything is written.
 *
 * <p>A schedule from code (source {@code code}) can be paused, resumed and triggered here, but not
 * changed or deleted: its definition is the code's, reconciled at each start.
 */
public interface Schedules {

    /** The longest tenant. */
    int MAX_TENANT = 60;

    /**
     * Creates a schedule: one {@code INSERT} into {@code layover.schedules} with its first
     * occurrence after now. Its args are checked against the job type (written as the job type
     * writes them, then read back) and stored as JSON.
     *
     * @param tenant the tenant, {@code ""} or 1-{@value #MAX_TENANT} characters without {@code /}
     * @param schedule fixed args only
     * @return the stored schedule
     * @throws InvalidScheduleException when the name is taken in the tenant, the args are a function
     *     or cannot be read by the job type, or the interval is under the scheduler's poll interval
     */
    ScheduleInfo create(String tenant, Schedule<?> schedule);

    /**
     * Changes a run-time schedule: one {@code UPDATE}. An occurrence already enqueued (even
     * running) is not touched: it runs with the args it was enqueued with. When the timing changes,
     * the next occurrence is the new timing's first after now; when only args or policies change,
     * the next occurrence stays.
     *
     * @param tenant the tenant
     * @param schedule the new definition, under the existing name
     * @return the stored schedule
     * @throws InvalidScheduleException when no run-time schedule has that name, or on bad input as
     *     for {@link #create}
     */
    ScheduleInfo update(String tenant, Schedule<?> schedule);

    /**
     * Pauses a schedule: no occurrence is enqueued until {@link #resume}. One {@code UPDATE}.
     *
     * @param tenant the tenant
     * @param name the name
     * @return whether a schedule was paused (false: none, or paused already)
     */
    boolean pause(String tenant, String name);

    /**
     * Resumes a paused schedule at its first occurrence after now: occurrences while it was paused
     * are not run. One {@code UPDATE}.
     *
     * @param tenant the tenant
     * @param name the name
     * @return whether a schedule was resumed (false: none, or not paused)
     */
    boolean resume(String tenant, String name);

    /**
     * Enqueues an occurrence now, outside the timing, with id
     * {@code sched:<tenant>/<name>@manual-<now>}; the next occurrence does not move and the overlap
     * policy is not applied (an explicit trigger runs). Works on a paused schedule too. The insert
     * and the schedule's {@code last_*} columns in one transaction. Needs the job type registered
     * with this instance.
     *
     * @param tenant the tenant
     * @param name the name
     * @return the job, or empty when no such schedule
     */
    Optional<Enqueued> triggerNow(String tenant, String name);

    /**
     * Deletes a run-time schedule (one {@code DELETE}); an occurrence already enqueued stays a job.
     *
     * @param tenant the tenant
     * @param name the name
     * @return whether one was deleted
     * @throws InvalidScheduleException when it is a schedule from code
     */
    boolean delete(String tenant, String name);

    /**
     * @param tenant the tenant
     * @param name the name
     * @return the schedule, from {@code layover.schedules_view}
     */
    Optional<ScheduleInfo> get(String tenant, String name);

    /**
     * @param tenant the tenant, or null for all
     * @return its schedules by name, from {@code layover.schedules_view}
     */
    List<ScheduleInfo> list(String tenant);
}
