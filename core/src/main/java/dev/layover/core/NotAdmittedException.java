package dev.layover.core;

import java.time.Instant;

/**
 * An interactive call was not admitted, so the provider was not called ({@link InteractiveCalls}):
 * its key cools down past the wait, its breaker is open, no permit came within the wait, the call
 * is larger than the key's bucket can ever admit, or the provider state could not be read (fail
 * closed). Nothing was spent but the wait.
 */
public class NotAdmittedException extends LayoverException {

    private static final long serialVersionUID = 1L;

    /** Why an interactive call was not admitted. */
    public enum Reason {
        /** The key cools down (a 429, an overload, a quota) until {@link #until()}, past the wait. */
        COOLING,
        /** The key's breaker is open until {@link #until()} ({@link Instant#MAX}: until an operator closes it). */
        BREAKER_OPEN,
        /** The key's breaker is half open and another caller holds its one trial call. */
        BREAKER_TRIAL,
        /** The key's bucket has no permit (or not the tokens) before {@link #until()}, past the wait. */
        NO_PERMIT,
        /** The token estimate is more than a dimension of the key's bucket can ever admit. */
        TOO_LARGE,
        /** The provider state could not be read or written: Layover fails closed. */
        STATE_UNAVAILABLE
    }

    /** The provider key. */
    private final String providerKey;
    /** Why the call was not admitted. */
    private final Reason reason;
    private final transient Instant until;

    /**
     * @param providerKey the key
     * @param reason why
     * @param until when the call could be admitted (null when unknown)
     * @param message the reason in a sentence
     */
    public NotAdmittedException(String providerKey, Reason reason, Instant until, String message) {
        super(message);
        this.providerKey = providerKey;
        this.reason = reason;
        this.until = until;
    }

    /** @return the provider key */
    public String providerKey() {
        return providerKey;
    }

    /** @return why the call was not admitted */
    public Reason reason() {
        return reason;
    }

    /** @return when the call could be admitted, in database time ({@code null} when unknown) */
    public Instant until() {
        return until;
    }
}
