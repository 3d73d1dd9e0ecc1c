package dev.layover.samples.boot;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.Enqueued;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.samples.boot.ReceiptsApplication.SendReceipt;
import org.springframework.stereotype.Service;

/** The application's own code: it enqueues a receipt job when an order is placed. */
@Service
public class Checkout {

    private final Layover layover;
    private final JobType<SendReceipt> sendReceipt;

    /**
     * @param layover the starter's Layover instance
     * @param sendReceipt the job type bean
     */
    public Checkout(Layover layover, JobType<SendReceipt> sendReceipt) {
        this.layover = layover;
        this.sendReceipt = sendReceipt;
    }

    /**
     * Enqueues the order's receipt. Database: one INSERT into the job table; the order id is the
     * idempotency key, so placing the same order twice sends one receipt.
     *
     * @param orderId the order
     * @param email the customer's address
     * @return the job
     */
    public Enqueued orderPlaced(String orderId, String email) {
        return layover.enqueue(sendReceipt, new SendReceipt(orderId, email), EnqueueOptions.key("receipt:" + orderId));
    }
}
