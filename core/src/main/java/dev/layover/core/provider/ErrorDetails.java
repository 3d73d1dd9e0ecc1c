package dev.layover.core.provider;

import java.time.Duration;
import java.util.List;

/**
 * What could be read from an error body, whatever the provider's shape.
 *
 * @param type OpenAI {@code error.type}, Anthropic {@code error.type}, or a Bedrock exception name
 * @param code OpenAI/Azure {@code error.code}, or Anthropic {@code error.details.error_code}
 * @param message the provider's message
 * @param status Google's {@code error.status} (e.g. {@code RESOURCE_EXHAUSTED})
 * @param embeddedStatus an HTTP status written inside the body (Google {@code error.code}, Azure
 *     {@code "429"}), or 0
 * @param quotaIds Google {@code QuotaFailure} violation quota ids
 * @param reasons Google {@code ErrorInfo} reasons
 * @param retryDelay Google {@code RetryInfo.retryDelay}, or {@code null}
 * @param streamError whether the error was found inside an event stream (SSE) or stream chunk
 * @param rawText the body when it was not JSON (a proxy's HTML page, plain text), or {@code null}
 */
record ErrorDetails(
        String type,
        String code,
        String message,
        String status,
        int embeddedStatus,
        List<String> quotaIds,
        List<String> reasons,
        Duration retryDelay,
        boolean streamError,
        String rawText) {

    static final ErrorDetails NONE =
            new ErrorDetails(null, null, null, null, 0, List.of(), List.of(), null, false, null);

    ErrorDetails {
        quotaIds = quotaIds == null ? List.of() : List.copyOf(quotaIds);
        reasons = reasons == null ? List.of() : List.copyOf(reasons);
    }

    /** Whether anything that looks like an error was found. */
    boolean isError() {
        return type != null || code != null || message != null || status != null || embeddedStatus != 0
                || !quotaIds.isEmpty() || !reasons.isEmpty();
    }

    static ErrorDetails raw(String text) {
        return new ErrorDetails(null, null, null, null, 0, List.of(), List.of(), null, false, text);
    }

    static ErrorDetails of(String type, String code, String message) {
        return new ErrorDetails(type, code, message, null, 0, List.of(), List.of(), null, false, null);
    }

    ErrorDetails withType(String newType) {
        return new ErrorDetails(newType, code, message, status, embeddedStatus, quotaIds, reasons, retryDelay,
                streamError, rawText);
    }

    ErrorDetails asStreamError() {
        return new ErrorDetails(type, code, message, status, embeddedStatus, quotaIds, reasons, retryDelay,
                true, rawText);
    }
}
