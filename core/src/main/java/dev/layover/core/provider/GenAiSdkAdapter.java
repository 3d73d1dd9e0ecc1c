package dev.layover.core.provider;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.genai.errors.ApiException;
import com.google.genai.errors.GenAiIOException;
import java.util.Optional;

/**
 * Reads google-genai ({@code com.google.genai.errors}) exceptions, for both Google AI and Vertex
 * AI. The SDK keeps only the status code, the status name and the message of an error (not its
 * headers nor its {@code details}), so Gemini's {@code QuotaFailure} and {@code RetryInfo} cannot
 * be seen through it; the message's "Please retry in 10.6s" hint still can. Only loaded after
 * {@link ProviderClassifier.SdkFamily} has seen a {@code com.google.genai} class.
 */
final class GenAiSdkAdapter {

    private GenAiSdkAdapter() {}

    static Optional<Classification> classify(Throwable t, ProviderClassifier classifier) {
        if (t instanceof ApiException e) {
            ObjectNode error = JsonNodeFactory.instance.objectNode();
            error.put("code", e.code());
            if (e.status() != null) {
                error.put("status", e.status());
            }
            if (e.message() != null && !e.message().isEmpty()) {
                error.put("message", e.message());
            }
            ErrorDetails d = ErrorBodyParser.fromJson(JsonNodeFactory.instance.objectNode().set("error", error), false);
            return Optional.of(classifier.classifyDetails(Provider.GEMINI, e.code(), HeaderMap.EMPTY, d));
        }
        if (t instanceof GenAiIOException) {
            return Optional.of(classifier.transientFailure(Provider.GEMINI, t));
        }
        return Optional.empty();
    }
}
