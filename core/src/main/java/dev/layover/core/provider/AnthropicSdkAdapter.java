package dev.layover.core.provider;

import com.anthropic.core.JsonValue;
import com.anthropic.core.ObjectMappers;
import com.anthropic.core.http.Headers;
import com.anthropic.errors.AnthropicIoException;
import com.anthropic.errors.AnthropicRetryableException;
import com.anthropic.errors.AnthropicServiceException;
import com.anthropic.errors.SseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Reads anthropic-java ({@code com.anthropic.errors}) exceptions, with any backend: Anthropic's
 * API, Vertex AI, or Bedrock (whose errors carry {@code x-amzn-*} headers and Bedrock exception
 * names). An {@code AnthropicServiceException} carries all of the response: {@code statusCode()},
 * {@code headers()} (so every {@code anthropic-ratelimit-*} header) and {@code body()}, the whole
 * error body; its typed views ({@code errorType()}, {@code errorCode()}, {@code errorDetails()},
 * and the {@code EnforcedSpendLimitReachedException}-style subclasses) are read from that same
 * body, so reading the body reads them. Only loaded after {@link ProviderClassifier.SdkFamily} has
 * seen a {@code com.anthropic} class.
 */
final class AnthropicSdkAdapter {

    private AnthropicSdkAdapter() {}

    static Optional<Classification> classify(Throwable t, ProviderClassifier classifier, Provider hint) {
        if (t instanceof AnthropicServiceException e) {
            Map<String, List<String>> headers = headers(e.headers());
            Provider provider = hint != null ? hint : isBedrock(headers) ? Provider.ANTHROPIC_BEDROCK : Provider.ANTHROPIC;
            // body() is the whole error body; for an SSE error it is the event's data
            return Optional.of(classifier.classifyRaw(provider, e.statusCode(), headers, json(e.body()),
                    e instanceof SseException));
        }
        if (t instanceof AnthropicIoException || t instanceof AnthropicRetryableException) {
            return Optional.of(classifier.transientFailure(hint != null ? hint : Provider.ANTHROPIC, t));
        }
        return Optional.empty();
    }

    private static Map<String, List<String>> headers(Headers headers) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        if (headers != null) {
            for (String name : headers.names()) {
                out.put(name, headers.values(name));
            }
        }
        return out;
    }

    private static boolean isBedrock(Map<String, List<String>> headers) {
        for (String name : headers.keySet()) {
            if (name.toLowerCase(Locale.ROOT).startsWith("x-amzn-")) {
                return true;
            }
        }
        return false;
    }

    private static String json(JsonValue body) {
        if (body == null || body.isMissing()) {
            return null;
        }
        try {
            return ObjectMappers.jsonMapper().writeValueAsString(body);
        } catch (Exception e) {
            return null;
        }
    }
}
