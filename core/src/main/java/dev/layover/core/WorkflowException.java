package dev.layover.core;

/**
 * A {@link Workflow} cannot be built: a job's name is taken or empty, an edge names a job the
 * workflow does not have, a job runs after itself, or the edges make a cycle. Thrown by the
 * builder, before anything is written.
 */
public class WorkflowException extends DependencyException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, in a sentence (a cycle is named)
     */
    public WorkflowException(String message) {
        super(message);
    }
}
