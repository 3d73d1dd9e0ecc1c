package dev.layover.core.batch;

import java.util.Objects;

/**
 * One result line of a finished batch, as a {@link BatchTransport} reads it from the provider.
 *
 * @param customId the custom id of the request line it answers
 * @param kind what became of the line
 * @param status the HTTP status the provider gives the line: the response's status code (OpenAI),
 *     200 for a succeeded line and the error type's status for an errored one (Anthropic:
 *     {@code invalid_request_error} 400, {@code rate_limit_error} 429, {@code overloaded_error}
 *     529, {@code api_error} 500, ...); 0 for expired and cancelled lines
 * @param body the response body (succeeded) or the error body (errored), JSON text; {@code ""}
 *     for expired and cancelled lines
 * @param inputTokens the line's reported input tokens, 0 when not reported
 * @param outputTokens the line's reported output tokens, 0 when not reported
 */
public record BatchResultLine(String customId, Kind kind, int status, String body, long inputTokens,
        long outputTokens) {

    /** What became of one line. */
    public enum Kind {
        /** The provider answered the request. */
        SUCCEEDED,
        /** The provider answered with an error. */
        ERRORED,
        /** The batch's window ran out before the line was done. */
        EXPIRED,
        /** The batch was cancelled before the line was done. */
        CANCELLED
    }

    /** @throws NullPointerException for a null id, kind or body */
    public BatchResultLine {
        Objects.requireNonNull(customId, "customId");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(body, "body");
    }
}
