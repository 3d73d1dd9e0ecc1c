package dev.layover.bench;

import dev.layover.core.provider.Classification;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
import dev.layover.testing.provider.FakeProvider;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/**
 * A minimal OpenAI chat completions client for the fake provider, shared by every benchmark that
 * calls it: one request, no retry of its own (retries belong to one layer: the queue, or the
 * per-call backoff loop being compared with it).
 */
final class ChatClient {

    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private static final ProviderClassifier CLASSIFIER = ProviderClassifier.defaults();

    private ChatClient() {}

    /**
     * Sends one chat completion whose user message is {@code prompt}.
     *
     * @param url the endpoint
     * @param prompt the user message
     * @return the response, whatever its status
     * @throws IOException on a network failure
     * @throws InterruptedException when interrupted
     */
    static HttpResponse<String> send(URI url, String prompt) throws IOException, InterruptedException {
        String body = "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
        HttpRequest req = HttpRequest.newBuilder(url)
                .timeout(Duration.ofSeconds(10))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        return HTTP.send(req, HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Sends one call whose user message is {@code prompt} in one API's request shape (the fake
     * provider answers each API at its own path, {@link dev.layover.testing.provider.FakeProvider.Endpoint#url(FakeProvider.Api)}).
     *
     * @param api the API
     * @param url the endpoint of that API
     * @param prompt the user message
     * @return the response, whatever its status
     * @throws IOException on a network failure
     * @throws InterruptedException when interrupted
     */
    static HttpResponse<String> send(FakeProvider.Api api, URI url, String prompt) throws IOException, InterruptedException {
        String body = switch (api) {
            case GEMINI_GENERATE_CONTENT -> "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"" + prompt + "\"}]}]}";
            case BEDROCK_CONVERSE -> "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"" + prompt + "\"}]}]}";
            default -> null;
        };
        if (body == null) {
            return send(url, prompt);
        }
        HttpRequest req = HttpRequest.newBuilder(url)
                .timeout(Duration.ofSeconds(10))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        return HTTP.send(req, HttpResponse.BodyHandlers.ofString());
    }

    /**
     * What Layover makes of an error response of one API.
     *
     * @param api the API that answered
     * @param r a response
     * @return its classification, empty for a success
     */
    static Optional<Classification> classify(FakeProvider.Api api, HttpResponse<String> r) {
        Provider p = switch (api) {
            case GEMINI_GENERATE_CONTENT -> Provider.GEMINI;
            case BEDROCK_CONVERSE -> Provider.BEDROCK;
            case ANTHROPIC_MESSAGES -> Provider.ANTHROPIC;
            case OPENAI_CHAT -> Provider.OPENAI;
        };
        return CLASSIFIER.classify(p, r);
    }

    /**
     * What Layover makes of a call that got no answer (a dropped connection, a timeout).
     *
     * @param api the API called
     * @param cause the exception
     * @return the classification (TRANSIENT for an IO error)
     */
    static Classification noResponse(FakeProvider.Api api, Throwable cause) {
        Provider p = switch (api) {
            case GEMINI_GENERATE_CONTENT -> Provider.GEMINI;
            case BEDROCK_CONVERSE -> Provider.BEDROCK;
            case ANTHROPIC_MESSAGES -> Provider.ANTHROPIC;
            case OPENAI_CHAT -> Provider.OPENAI;
        };
        return CLASSIFIER.classifyNoResponse(p, cause).orElseThrow();
    }

    /**
     * What Layover makes of an error response (the classifier a Layover user would call).
     *
     * @param r a response
     * @return its classification, empty for a success
     */
    static Optional<Classification> classify(HttpResponse<String> r) {
        return CLASSIFIER.classify(Provider.OPENAI, r);
    }

    /**
     * The wait a 429 asks for, as an HTTP client library reads it: {@code retry-after-ms}, else
     * {@code retry-after} in seconds.
     *
     * @param r a response
     * @return the wait in milliseconds, 0 when none is given
     */
    static long retryAfterMillis(HttpResponse<String> r) {
        Optional<String> ms = r.headers().firstValue("retry-after-ms");
        try {
            if (ms.isPresent()) {
                return Math.max(0, (long) Double.parseDouble(ms.get().trim()));
            }
            Optional<String> s = r.headers().firstValue("retry-after");
            if (s.isPresent()) {
                return Math.max(0, (long) (Double.parseDouble(s.get().trim()) * 1000));
            }
        } catch (NumberFormatException e) {
            return 0;
        }
        return 0;
    }
}
