package dev.layover.core;

import dev.layover.core.outcome.Outcome;

/**
 * An interactive call was admitted and made, and failed ({@link InteractiveCalls#call}): what the
 * supplier threw, classified exactly as a job handler's exception is ({@link #outcome()}: a rate
 * limit, an overload, a refused key, ... or {@link Outcome.Retry} for an error no rule knows), and
 * already recorded against the key's fleet-wide state. The exception thrown is the cause.
 */
public class CallFailedException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /** The provider key. */
    private final String providerKey;
    private final transient Outcome outcome;

    /**
     * @param providerKey the key
     * @param outcome the classification, as a handler's outcome
     * @param cause what the call threw
     */
    public CallFailedException(String providerKey, Outcome outcome, Throwable cause) {
        super("the call of " + providerKey + " failed (" + outcome.kind().tag()
                + (outcome.reason() == null ? "" : ": " + outcome.reason()) + ")", cause);
        this.providerKey = providerKey;
        this.outcome = outcome;
    }

    /** @return the provider key */
    public String providerKey() {
        return providerKey;
    }

    /** @return the classification, as the outcome a handler throwing this would have had */
    public Outcome outcome() {
        return outcome;
    }

    /** @return the outcome's kind: what the failure did to the key's state ({@link Outcome.Kind}) */
    public Outcome.Kind kind() {
        return outcome.kind();
    }
}
