package dev.layover.core;

import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;

/**
 * A step that cannot be used as asked ({@code docs/steps.md}, "Bad input"). Thrown by
 * {@link JobContext#step}; it carries the outcome the job gets when the handler lets it through,
 * which no job loses (its stored steps stay with it, and with its dead letter):
 *
 * <table>
 *   <caption>What each problem does</caption>
 *   <tr><th>problem</th><th>outcome</th><th>why</th></tr>
 *   <tr><td>two steps of one name in one run; a step inside a step; a step after
 *       {@link JobContext#sleep}</td><td>parked {@code handler_parked} at once, no attempt
 *       spent</td><td>the handler's code is wrong: running it again gives the same; fix it and replay
 *       (the finished steps are reused)</td></tr>
 *   <tr><td>a result larger than the job type's {@code maxStepResultBytes} (default 256 KiB)</td>
 *       <td>parked {@code handler_parked} at once, no attempt spent</td><td>the call was made, its
 *       result cannot be stored; raise the cap and replay</td></tr>
 *   <tr><td>a stored step of this name was stored as another type (a handler that changed a step's
 *       type without renaming it)</td><td>retried, an attempt spent (the job's own error)</td><td>in
 *       a rolling deploy a worker of the version that stored it may still finish the job; once
 *       attempts run out it parks {@code job_error}; a replay from scratch drops the steps</td></tr>
 * </table>
 *
 * <p>A stored result of the same type that no longer reads (its class changed incompatibly) is not
 * an error: the step runs again and its new result replaces the stored one.
 */
public class StepException extends OutcomeException {

    private static final long serialVersionUID = 1L;

    private final String step;

    /**
     * @param step the step's name
     * @param outcome the outcome the job gets
     */
    public StepException(String step, Outcome outcome) {
        super(outcome);
        this.step = step;
    }

    /** @return the step's name */
    public String step() {
        return step;
    }

    @Override
    public String getMessage() {
        return outcome().reason();
    }
}
