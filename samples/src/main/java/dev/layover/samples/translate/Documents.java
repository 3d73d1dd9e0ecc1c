package dev.layover.samples.translate;

import dev.layover.samples.translate.TranslateJob.TranslateDocument;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The documents the demo translates, made up deterministically from their number: two to six
 * segments each, for one of three accounts, into one of five languages.
 */
public final class Documents {

    /** A big customer. */
    public static final String ACME = "acme";
    /** Another one. */
    public static final String GLOBEX = "globex";
    /** A trial account with a few credits: most of its documents find it empty and are parked. */
    public static final String INITECH = "initech-trial";

    private static final List<String> SENTENCES = List.of(
            "Your order has shipped.",
            "The invoice is attached to this message.",
            "Please confirm your email address.",
            "Our support team answers within one business day.",
            "The meeting moved to Thursday at ten.",
            "Thank you for your patience.",
            "The password must be at least twelve characters long.",
            "Your subscription renews on the first of the month.",
            "We could not process your payment.",
            "The warehouse closes early on Fridays.",
            "Returns are free within thirty days.",
            "The new release fixes the export bug.");

    private Documents() {}

    /** @return the accounts and their opening balances */
    public static Map<String, Long> openingBalances() {
        return Map.of(ACME, 1_000_000L, GLOBEX, 50_000L, INITECH, 12L);
    }

    /**
     * @param n the document's number, from 0
     * @return the document
     */
    public static TranslateDocument document(int n) {
        String account = n % 10 == 3 ? INITECH : n % 2 == 0 ? ACME : GLOBEX;
        List<String> targets = DemoScript.targets();
        int count = 2 + Math.floorMod(n * 7, 5);
        List<String> segments = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            segments.add(SENTENCES.get(Math.floorMod(n * 5 + i * 3, SENTENCES.size())));
        }
        return new TranslateDocument(String.format("doc-%04d", n), account, targets.get(n % targets.size()), segments);
    }

    /**
     * @param n the document's number
     * @return whether the customer's webhook times out on its first delivery (one in 20)
     */
    public static boolean firstDeliveryFails(int n) {
        return n % 20 == 7;
    }
}
