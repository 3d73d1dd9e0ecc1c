package dev.layover.core.outcome;

import dev.layover.core.LayoverException;
import java.util.Objects;

/**
 * Carries an {@link Outcome} out of a handler by throwing, from any depth of the call stack:
 * {@code throw Outcome.rateLimited(Duration.ofSeconds(20)).toException();}. Layover applies the
 * outcome exactly as if the handler had returned it.
 */
public class OutcomeException extends LayoverException {

    private static final long serialVersionUID = 1L;

    private final transient Outcome outcome;

    /**
     * @param outcome the outcome to apply
     */
    public OutcomeException(Outcome outcome) {
        super(String.valueOf(outcome), causeOf(outcome));
        this.outcome = Objects.requireNonNull(outcome, "outcome");
    }

    /** @return the outcome to apply */
    public Outcome outcome() {
        return outcome;
    }

    private static Throwable causeOf(Outcome o) {
        return o == null ? null : o.cause();
    }
}
