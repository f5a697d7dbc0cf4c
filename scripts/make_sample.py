"""Write raw/sample/sample-airline.json: the hand-written TauBench-format sample.

Kept as code so that every tool result's JSON is well formed and the sample can be
regenerated identically; the output file is committed and is what the project reads.
Run: python scripts/make_sample.py
"""

import json
from pathlib import Path

SYSTEM = (
    "# Airline Agent Policy (mtcabench sample)\n\n"
    "The current time is 2024-05-15 15:00:00 EST.\n\n"
    "As an airline agent, you can help users book, modify, or cancel flight reservations. "
    "Obtain the user id first. You should not provide any information, knowledge, or "
    "procedures not provided by the user or available tools."
)


def call(cid, name, args, content=None):
    return {
        "content": content,
        "role": "assistant",
        "tool_calls": [
            {"function": {"arguments": json.dumps(args), "name": name}, "id": cid, "type": "function"}
        ],
    }


def tool(cid, name, result):
    return {
        "role": "tool",
        "tool_call_id": cid,
        "name": name,
        "content": result if isinstance(result, str) else json.dumps(result),
    }


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"content": text, "role": "assistant"}


# 1. A chain through a tool call and an assistant summary: the final answer repeats values
#    the agent summarised in turn 8, which came from the reservation lookup (turn 7), whose
#    call (turn 6) used an id from the profile lookup (turn 3), whose call used the user's id.
chain = [
    {"role": "system", "content": SYSTEM},
    user("Hi, I want to check my upcoming trip. My user id is sara_doe_496."),
    call("call_s1_a", "get_user_details", {"user_id": "sara_doe_496"}),
    tool("call_s1_a", "get_user_details", {
        "name": {"first_name": "Sara", "last_name": "Doe"},
        "email": "sara.doe@example.com",
        "membership": "silver",
        "reservations": ["4WQ150", "VAAOXJ"],
    }),
    assistant("Thanks, Sara. I see two reservations on your profile: 4WQ150 and VAAOXJ. "
              "Which one would you like to check?"),
    user("The first one, please."),
    call("call_s1_b", "get_reservation_details", {"reservation_id": "4WQ150"}),
    tool("call_s1_b", "get_reservation_details", {
        "reservation_id": "4WQ150",
        "user_id": "sara_doe_496",
        "origin": "JFK",
        "destination": "SEA",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT136", "date": "2024-05-20", "price": 151}],
        "passengers": [{"first_name": "Sara", "last_name": "Doe", "dob": "1991-03-14"}],
        "payment_history": [{"payment_id": "credit_card_7815826", "amount": 151}],
        "created_at": "2024-05-02T09:12:45",
        "total_baggages": 1,
        "nonfree_baggages": 0,
        "insurance": "no",
    }),
    assistant("Reservation 4WQ150 is a one-way economy trip from JFK to SEA on flight HAT136 "
              "on 2024-05-20, paid with credit_card_7815826."),
    user("Great. Which flight was that again, and what did I pay?"),
    assistant("You are on flight HAT136, and you paid $151 with credit_card_7815826."),
    user("Thanks, that's all."),
]

# 2. A multi-source answer: the price comes from the flight search (turn 5), the payment
#    method and its balance from the profile (turn 3); the search used the user's own
#    origin, destination and date (turn 1).
multi = [
    {"role": "system", "content": SYSTEM},
    user("Hello, I'd like a business seat from ORD to LAX on 2024-05-22. "
         "My user id is omar_khan_102."),
    call("call_s2_a", "get_user_details", {"user_id": "omar_khan_102"}),
    tool("call_s2_a", "get_user_details", {
        "name": {"first_name": "Omar", "last_name": "Khan"},
        "payment_methods": {
            "gift_card_3576581": {"source": "gift_card", "amount": 340, "id": "gift_card_3576581"}
        },
        "membership": "gold",
        "reservations": [],
    }),
    call("call_s2_b", "search_direct_flight",
         {"origin": "ORD", "destination": "LAX", "date": "2024-05-22"}),
    tool("call_s2_b", "search_direct_flight", [{
        "flight_number": "HAT227",
        "origin": "ORD",
        "destination": "LAX",
        "scheduled_departure_time_est": "08:00:00",
        "status": "available",
        "prices": {"basic_economy": 88, "economy": 156, "business": 412},
    }]),
    assistant("Flight HAT227 leaves ORD at 08:00:00 and a business seat costs $412. "
              "You can pay with gift_card_3576581, which holds $340, so $72 would remain to pay."),
    user("I'll think about it, thanks."),
]

# 3. A hallucination: the answer states a departure time that contradicts the tool result
#    (17:40:00) and a seat that appears nowhere in the conversation.
halluc = [
    {"role": "system", "content": SYSTEM},
    user("Hi, my user id is lena_park_330. Is flight HAT045 on time today?"),
    call("call_s3_a", "get_flight_status", {"flight_number": "HAT045", "date": "2024-05-15"}),
    tool("call_s3_a", "get_flight_status",
         {"status": "delayed", "estimated_departure_time_est": "17:40:00"}),
    assistant("Flight HAT045 is delayed; the new estimated departure time is 18:25:00, "
              "and your seat 14C is confirmed."),
    user("Okay, please transfer me to a human agent."),
    call("call_s3_b", "transfer_to_human_agents", {"summary": "User lena_park_330 asks about "
                                                  "the delay of flight HAT045."}),
    tool("call_s3_b", "transfer_to_human_agents", "Transfer successful"),
    assistant("You are being transferred to a human agent. Have a nice day."),
]

runs = [
    {"task_id": "s1", "trial": 0, "reward": 1.0,
     "info": {"note": "mtcabench sample: chain through a tool call and a summary"}, "traj": chain},
    {"task_id": "s2", "trial": 0, "reward": 1.0,
     "info": {"note": "mtcabench sample: multi-source answer"}, "traj": multi},
    {"task_id": "s3", "trial": 0, "reward": 0.0,
     "info": {"note": "mtcabench sample: hallucinated values"}, "traj": halluc},
]

out = Path(__file__).resolve().parent.parent / "raw" / "sample" / "sample-airline.json"
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
print(f"wrote {out}")
