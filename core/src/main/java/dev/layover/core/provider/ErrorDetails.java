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
 * @param quotas Google {@code QuotaFailure} violations
 * @param reasons Google {@code ErrorInfo} reasons
 * @param retryDelay Google {@code RetryInfo.retryDelay}, or {@code null}
 * @param streamError whether the error was found inside an event stream (SSE) or stream chunk
 * @param rawText the body when it was not JSON (a proxy's HTML page, plain text), or {@code null}
 * @param detail what a relaying gateway quoted of the upstream's error (OpenRouter's
 *     {@code error.metadata.raw}), or {@code null}
 * @param bodyHeaders response headers a gateway quoted in its body (OpenRouter's
 *     {@code error.metadata.headers}); empty when none
 */
record ErrorDetails(
        String type,
        String code,
        String message,
        String status,
        int embeddedStatus,
        List<Quota> quotas,
        List<String> reasons,
        Duration retryDelay,
        boolean streamError,
        String rawText,
        String detail,
        java.util.Map<String, List<String>> bodyHeaders) {

    static final ErrorDetails NONE =
            new ErrorDetails(null, null, null, null, 0, List.of(), List.of(), null, false, null, null, null);

    ErrorDetails {
        quotas = quotas == null ? List.of() : List.copyOf(quotas);
        reasons = reasons == null ? List.of() : List.copyOf(reasons);
        bodyHeaders = bodyHeaders == null ? java.util.Map.of() : java.util.Map.copyOf(bodyHeaders);
    }

    /** The same without the gateway's quote and headers (the fields of the first nine components). */
    ErrorDetails(String type, String code, String message, String status, int embeddedStatus, List<Quota> quotas,
            List<String> reasons, Duration retryDelay, boolean streamError, String rawText) {
        this(type, code, message, status, embeddedStatus, quotas, reasons, retryDelay, streamError, rawText, null,
                null);
    }

    /** Whether anything that looks like an error was found. */
    boolean isError() {
        return type != null || code != null || message != null || status != null || embeddedStatus != 0
                || !quotas.isEmpty() || !reasons.isEmpty();
    }

    /** The quota ids of the {@code QuotaFailure} violations, in order. */
    List<String> quotaIds() {
        return quotas.stream().map(Quota::id).filter(java.util.Objects::nonNull).toList();
    }

    static ErrorDetails raw(String text) {
        return new ErrorDetails(null, null, null, null, 0, List.of(), List.of(), null, false, text);
    }

    static ErrorDetails of(String type, String code, String message) {
        return new ErrorDetails(type, code, message, null, 0, List.of(), List.of(), null, false, null);
    }

    ErrorDetails withType(String newType) {
        return new ErrorDetails(newType, code, message, status, embeddedStatus, quotas, reasons, retryDelay,
                streamError, rawText, detail, bodyHeaders);
    }

    ErrorDetails asStreamError() {
        return new ErrorDetails(type, code, message, status, embeddedStatus, quotas, reasons, retryDelay,
                true, rawText, detail, bodyHeaders);
    }

    /**
     * One Google {@code QuotaFailure} violation.
     *
     * @param id {@code quotaId}, e.g. {@code GenerateContentInputTokensPerModelPerMinute-FreeTier}
     * @param metric {@code quotaMetric}, e.g. {@code generativelanguage.googleapis.com/generate_content_free_tier_requests}
     * @param value {@code quotaValue}, the limit, or {@code null} when absent or not a number
     */
    record Quota(String id, String metric, Double value) {}
}
