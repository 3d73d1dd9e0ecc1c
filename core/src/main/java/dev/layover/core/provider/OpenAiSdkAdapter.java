package dev.layover.core.provider;

import com.openai.core.JsonValue;
import com.openai.core.ObjectMappers;
import com.openai.core.http.Headers;
import com.openai.errors.OpenAIIoException;
import com.openai.errors.OpenAIRetryableException;
import com.openai.errors.OpenAIServiceException;
import com.openai.errors.SseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reads openai-java ({@code com.openai.errors}) exceptions, also with its Azure OpenAI backend.
 * An {@code OpenAIServiceException} (every HTTP error, and {@code SseException} for an error inside
 * a stream) carries all of the response: {@code statusCode()}, {@code headers()} and {@code body()}
 * (the parsed {@code error} member); its {@code code()}, {@code type()} and {@code param()} are read
 * from that same body, so reading the body reads them. openai-java reports every server it is pointed
 * at as OpenAI: without a hint (or with {@link Provider#OPENAI}), the server is recognised by the
 * headers in which it names itself (Azure's API Management headers, Groq's {@code x-groq-region},
 * ...: the detect rows of {@link ProviderRules}). Only loaded after
 * {@link ProviderClassifier.SdkFamily} has seen a {@code com.openai} class.
 */
final class OpenAiSdkAdapter {

    private OpenAiSdkAdapter() {}

    static Optional<Classification> classify(Throwable t, ProviderClassifier classifier, Provider hint) {
        if (t instanceof OpenAIServiceException e) {
            Map<String, List<String>> headers = headers(e.headers());
            Provider provider = hint != null ? hint : Provider.OPENAI;
            // body() is the "error" member the SDK parsed (or the whole body when it had none)
            String body = json(e.body());
            return Optional.of(classifier.classifyRaw(provider, e.statusCode(), headers, body, e instanceof SseException));
        }
        if (t instanceof OpenAIIoException || t instanceof OpenAIRetryableException) {
            return Optional.of(classifier.transientFailure(hint != null ? hint : Provider.OPENAI, t));
        }
        return Optional.empty();
    }

    static Map<String, List<String>> headers(Headers headers) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        if (headers != null) {
            for (String name : headers.names()) {
                out.put(name, headers.values(name));
            }
        }
        return out;
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
