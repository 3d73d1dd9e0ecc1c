package dev.layover.core.provider.state;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.provider.Classification;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderClassifier;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/** A minimal OpenAI chat client for the fake provider; failures are thrown as classified outcomes. */
public final class FakeChat {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private FakeChat() {}

    /**
     * Sends one chat completion.
     *
     * @param url the endpoint
     * @param prompt the user message
     * @return the answer's content
     * @throws dev.layover.core.outcome.OutcomeException the classified outcome of an error response
     */
    public static String complete(URI url, String prompt) throws IOException, InterruptedException {
        String body = JSON.createObjectNode()
                .put("model", "gpt-4o-mini")
                .set("messages", JSON.createArrayNode().add(JSON.createObjectNode().put("role", "user").put("content", prompt)))
                .toString();
        HttpRequest req = HttpRequest.newBuilder(url)
                .timeout(Duration.ofSeconds(10))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        HttpResponse<String> r = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
        Optional<Classification> failure = ProviderClassifier.defaults().classify(Provider.OPENAI, r);
        if (failure.isPresent()) {
            throw failure.get().toOutcome().toException();
        }
        JsonNode n = JSON.readTree(r.body());
        return n.path("choices").path(0).path("message").path("content").asText();
    }
}
