package dev.layover.samples.translate;

/**
 * The model answered, but the answer cannot be used: cut off, not JSON, or missing segments. The
 * translation job turns it into a retry (an attempt spent, not a breaker failure: the provider is
 * healthy, this answer is not).
 */
public final class UnusableAnswerException extends Exception {

    private static final long serialVersionUID = 1L;

    /** Whether the answer was cut off. */
    private final boolean truncated;

    /**
     * @param truncated whether the answer was cut off
     * @param message what is wrong with it
     */
    public UnusableAnswerException(boolean truncated, String message) {
        super(message);
        this.truncated = truncated;
    }

    /** @return whether the answer was cut off ({@code finish_reason: length}, or JSON that never closes) */
    public boolean truncated() {
        return truncated;
    }
}
