package dev.layover.core.provider;

/**
 * What kind of provider failure a response or exception is. Each class maps to one
 * {@link dev.layover.core.outcome.Outcome}; see {@link Classification#toOutcome()}.
 */
public enum FailureClass {
    /** Too many requests or tokens for now; wait and try again without spending an attempt. */
    RATE_LIMITED,
    /** A quota with a longer horizon is spent (per-day limits, billing, credit, spend limits). */
    QUOTA_EXHAUSTED,
    /** The provider is overloaded (Anthropic 529, HTTP 503, Bedrock model not ready). */
    OVERLOADED,
    /** A transient failure: timeout, IO error, 5xx, 408, 409, 425. */
    TRANSIENT,
    /** The provider refused the credentials (401, 403, invalid or unknown key). */
    AUTH_REFUSED,
    /** The request itself is wrong and will never pass as it is (other 4xx, too large). */
    BAD_REQUEST
}
