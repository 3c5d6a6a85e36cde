"""Locust peer for the load driver benchmark: FastHttpUser, no wait, GET of the 2-byte file."""
from locust import FastHttpUser, constant, task


class Get(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get("/x")
