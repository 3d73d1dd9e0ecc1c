package dev.layover.core.provider;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.genai.errors.ApiException;
import com.google.genai.errors.GenAiIOException;
import java.util.Optional;

/**
 * Reads google-genai ({@code com.google.genai.errors}) exceptions, for both Google AI and Vertex
 * AI. Only loaded after {@link ProviderClassifier.SdkFamily} has seen a {@code com.google.genai}
 * class.
 *
 * <p>What google-genai 2.x keeps of an HTTP error ({@code ApiException.throwFromResponse}): the
 * status {@code code()}, the body's {@code error.status} as {@code status()} (the HTTP reason
 * phrase when the body has none), and as {@code message()} the body's {@code error.message}
 * followed by a line {@code "Details:"} and then each entry of {@code error.details} on a line of
 * its own, as compact JSON (or as its {@code detail} text when it has one). So Gemini's
 * {@code QuotaFailure} (the quota ids that tell a per-day quota from a per-minute one, and their
 * {@code quotaValue}), {@code RetryInfo.retryDelay} and {@code ErrorInfo.reason} are all there, and
 * this adapter reads them back out of the message. Neither the response headers nor the raw body
 * are kept. An error inside a stream ({@code ApiException.throwFromErrorNode}) keeps only the
 * chunk's message and status: its details are lost.
 */
final class GenAiSdkAdapter {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Where google-genai 2.x appends the error's details to the message. */
    private static final String DETAILS = "Details:";

    private GenAiSdkAdapter() {}

    static Optional<Classification> classify(Throwable t, ProviderClassifier classifier, Provider hint) {
        Provider provider = hint != null ? hint : Provider.GEMINI;
        if (t instanceof ApiException e) {
            ObjectNode error = JsonNodeFactory.instance.objectNode();
            error.put("code", e.code());
            if (e.status() != null) {
                error.put("status", e.status());
            }
            String message = e.message();
            if (message != null) {
                int at = detailsStart(message);
                if (at >= 0) {
                    error.set("details", details(message.substring(at + DETAILS.length())));
                    message = message.substring(0, at).strip();
                }
                if (!message.isEmpty()) {
                    error.put("message", message);
                }
            }
            ErrorDetails d = ErrorBodyParser.fromJson(JsonNodeFactory.instance.objectNode().set("error", error), false);
            return Optional.of(classifier.classifyDetails(provider, e.code(), HeaderMap.EMPTY, d));
        }
        if (t instanceof GenAiIOException) {
            return Optional.of(classifier.transientFailure(provider, t));
        }
        return Optional.empty();
    }

    /** The index of the "Details:" the SDK wrote, at the start or after a newline; -1 when absent. */
    private static int detailsStart(String message) {
        if (message.startsWith(DETAILS)) {
            return 0;
        }
        int at = message.lastIndexOf("\n" + DETAILS);
        return at < 0 ? -1 : at + 1;
    }

    /** Each line that is a JSON object is one entry of {@code error.details}; text lines are skipped. */
    private static ArrayNode details(String lines) {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        for (String line : lines.split("\n")) {
            String l = line.strip();
            if (!l.startsWith("{") || l.length() > 64 * 1024) {
                continue;
            }
            try {
                JsonNode n = JSON.readTree(l);
                if (n != null && n.isObject()) {
                    out.add(n);
                }
            } catch (Exception | StackOverflowError notJson) {
                // a detail the SDK wrote as text, or a message line that merely starts with a brace
            }
        }
        return out;
    }
}
