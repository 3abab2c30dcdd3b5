"""A deliberately simple pure-Python Patchwork referee, written from docs/rules.md alone.

It is only a test oracle: it must stay independent of the `patchsim` package and favours
clarity over speed. Squares are (row, col) pairs counted from 0 at the top-left corner; in move
texts they are named by a column letter and a 1-based row number ("a1" is the top-left square).

Record format: {"rules": <rules dict>, "circle": [patch ids], "moves": ["pass", "buy P05 a1 b1 ...",
"leather e5", ...]}. `replay_trace(record)` returns one JSON-ready summary per position.
"""

import random

BASE_PATCHES = [
    {"id": "P00", "shape": "XX", "cost": 2, "time": 1, "income": 0},
    {"id": "P01", "shape": "XXX", "cost": 2, "time": 2, "income": 0},
    {"id": "P02", "shape": "XXXX", "cost": 3, "time": 3, "income": 1},
    {"id": "P03", "shape": "XXXXX", "cost": 7, "time": 1, "income": 1},
    {"id": "P04", "shape": "XX/XX", "cost": 6, "time": 5, "income": 2},
    {"id": "P05", "shape": "XXX/XX.", "cost": 2, "time": 2, "income": 0},
    {"id": "P06", "shape": "XXXX/XX..", "cost": 10, "time": 5, "income": 3},
    {"id": "P07", "shape": "XXXX/.XX.", "cost": 7, "time": 4, "income": 2},
    {"id": "P08", "shape": "XXX./.XXX", "cost": 4, "time": 2, "income": 0},
    {"id": "P09", "shape": "XX./XXX/..X", "cost": 8, "time": 6, "income": 3},
    {"id": "P10", "shape": "XXX/X.X", "cost": 1, "time": 2, "income": 0},
    {"id": "P11", "shape": "XXXX/X..X", "cost": 1, "time": 5, "income": 1},
    {"id": "P12", "shape": "XX./.XX/XX.", "cost": 3, "time": 6, "income": 2},
    {"id": "P13", "shape": "XXX/.X.", "cost": 2, "time": 2, "income": 0},
    {"id": "P14", "shape": "XXX/.X./.X.", "cost": 5, "time": 5, "income": 2},
    {"id": "P15", "shape": "X.../XXXX/X...", "cost": 7, "time": 2, "income": 2},
    {"id": "P16", "shape": ".X../XXXX/.X..", "cost": 0, "time": 3, "income": 1},
    {"id": "P17", "shape": "XXX/X..", "cost": 4, "time": 2, "income": 1},
    {"id": "P18", "shape": "XXX/X..", "cost": 4, "time": 6, "income": 2},
    {"id": "P19", "shape": "XXXX/X...", "cost": 10, "time": 3, "income": 2},
    {"id": "P20", "shape": "XXXX/.X..", "cost": 3, "time": 4, "income": 1},
    {"id": "P21", "shape": ".X./XXX/.X.", "cost": 5, "time": 4, "income": 2},
    {"id": "P22", "shape": "..X../XXXXX/..X..", "cost": 1, "time": 4, "income": 1},
    {"id": "P23", "shape": ".XX./XXXX/.XX.", "cost": 5, "time": 3, "income": 1},
    {"id": "P24", "shape": "XXX/.X./XXX", "cost": 2, "time": 3, "income": 0},
    {"id": "P25", "shape": "XX/X.", "cost": 3, "time": 1, "income": 0},
    {"id": "P26", "shape": "XX/X.", "cost": 1, "time": 3, "income": 0},
    {"id": "P27", "shape": "XX./.XX", "cost": 3, "time": 2, "income": 1},
    {"id": "P28", "shape": "XX./.XX", "cost": 7, "time": 6, "income": 3},
    {"id": "P29", "shape": "XXX./..XX", "cost": 2, "time": 3, "income": 1},
    {"id": "P30", "shape": "X.../XXXX/...X", "cost": 1, "time": 2, "income": 0},
    {"id": "P31", "shape": ".X../XXXX/..X.", "cost": 2, "time": 1, "income": 0},
    {"id": "P32", "shape": "XX./.XX/..X", "cost": 10, "time": 4, "income": 3},
]

EDITION_LEATHER = {1: [20, 26, 32, 44, 50], 2: [26, 32, 38, 44, 50]}


def edition_rules(n):
    """The base-game rules dict for edition 1 or 2 (they differ only in the leather marks)."""
    return {
        "board": {"rows": 9, "cols": 9},
        "starting_buttons": 5,
        "track": {
            "last_space": 53,
            "income": [5, 11, 17, 23, 29, 35, 41, 47, 53],
            "leather": list(EDITION_LEATHER[n]),
        },
        "offer_size": 3,
        "bonus": {"square": 7, "points": 7},
        "empty_square_penalty": 2,
        "patches": [dict(p) for p in BASE_PATCHES],
        "start_after": "P00",
        "leather_when_full": "discard",
    }


class IllegalMove(Exception):
    """An illegal or malformed move in a record; the message names the move number and text."""


# ----------------------------------------------------------------------------- shapes and squares


def parse_shape(text):
    """'XX./.XX' -> set of (row, col) cells."""
    rows = text.split("/")
    return {(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "X"}


def normalise(cells):
    """Translate a cell set so that its smallest row and column are 0."""
    top = min(r for r, _ in cells)
    left = min(c for _, c in cells)
    return frozenset((r - top, c - left) for r, c in cells)


def orientations(cells):
    """All distinct rotations and reflections of a cell set, normalised."""
    result = set()
    current = set(cells)
    for _ in range(4):
        current = {(c, -r) for r, c in current}  # rotate a quarter turn
        result.add(normalise(current))
        result.add(normalise({(r, -c) for r, c in current}))  # and its mirror image
    return result


def square_name(square):
    row, col = square
    return "abcdefghijklmnopqrstuvwxyz"[col] + str(row + 1)


def parse_square(name):
    """'c10' -> (9, 2); raises ValueError on a malformed name."""
    if len(name) < 2 or not name[0].isalpha() or not name[0].islower() or not name[1:].isdigit():
        raise ValueError(f"malformed square {name!r}")
    return int(name[1:]) - 1, ord(name[0]) - ord("a")


# ----------------------------------------------------------------------------- the game


class Game:
    """The full game state. `play(text)` applies one move or raises ValueError(reason)."""

    def __init__(self, rules, circle):
        self.rules = rules
        self.rows = rules["board"]["rows"]
        self.cols = rules["board"]["cols"]
        self.last = rules["track"]["last_space"]
        self.patches = {p["id"]: p for p in rules["patches"]}
        self.shapes = {
            pid: orientations(parse_shape(p["shape"])) for pid, p in self.patches.items()
        }
        if sorted(circle) != sorted(self.patches):
            raise ValueError("circle must list every regular patch id exactly once")
        if rules.get("start_after") is not None and circle[-1] != rules["start_after"]:
            raise ValueError(f"circle must end with the start_after patch {rules['start_after']}")
        # circle: remaining patches clockwise, starting right after the neutral token.
        self.circle = list(circle)
        self.position = [0, 0]
        start = rules["starting_buttons"]
        self.buttons = [start, start + rules.get("second_player_buttons", 0)]
        self.income = [0, 0]
        self.covered = [set(), set()]
        self.bonus_holder = None
        self.leather_on_track = sorted(rules["track"]["leather"])
        self.pending = []  # leather marks claimed by the player to move, still to be placed
        self.pending_player = None
        self.top = 0  # whose token arrived last; it is on top when both share a space
        self.first_at_last = None  # who reached the last space first (tie-break)

    # --- derived facts
    def finished(self):
        return not self.pending and self.position == [self.last, self.last]

    def to_move(self):
        if self.pending:
            return self.pending_player
        if self.finished():
            return None
        a, b = self.position
        if a == self.last:
            return 1
        if b == self.last:
            return 0
        if a != b:
            return 0 if a < b else 1
        return self.top

    def offer(self):
        return self.circle[: self.rules["offer_size"]]

    def empty_squares(self, player):
        return self.rows * self.cols - len(self.covered[player])

    def score(self, player):
        bonus = self.rules["bonus"]["points"] if self.bonus_holder == player else 0
        penalty = self.rules["empty_square_penalty"] * self.empty_squares(player)
        return self.buttons[player] + bonus - penalty

    def winner(self):
        if not self.finished():
            return None
        s0, s1 = self.score(0), self.score(1)
        if s0 != s1:
            return 0 if s0 > s1 else 1
        return self.first_at_last

    def placements(self, player, pid):
        """Every distinct set of squares the patch could cover on the player's quilt."""
        result = set()
        for shape in self.shapes[pid]:
            height = max(r for r, _ in shape) + 1
            width = max(c for _, c in shape) + 1
            for r0 in range(self.rows - height + 1):
                for c0 in range(self.cols - width + 1):
                    cells = frozenset((r + r0, c + c0) for r, c in shape)
                    if not cells & self.covered[player]:
                        result.add(cells)
        return result

    def legal_move_texts(self):
        player = self.to_move()
        if player is None:
            return []
        if self.pending:
            return [
                f"leather {square_name((r, c))}"
                for r in range(self.rows)
                for c in range(self.cols)
                if (r, c) not in self.covered[player]
            ]
        texts = ["pass"]
        for pid in self.offer():
            if self.patches[pid]["cost"] <= self.buttons[player]:
                for cells in sorted(self.placements(player, pid), key=sorted):
                    texts.append(f"buy {pid} " + " ".join(square_name(s) for s in sorted(cells)))
        return texts

    # --- applying moves
    def play(self, text):
        player = self.to_move()
        if player is None:
            raise ValueError("the game is already over")
        words = text.split()
        if not words:
            raise ValueError("empty move")
        if self.pending:
            if words[0] != "leather":
                raise ValueError(f"player {player} must first place a claimed leather patch")
            if len(words) != 2:
                raise ValueError("a leather move names exactly one square")
            self.place(player, {self.check_square(words[1])})
            self.pending.pop(0)
            self.settle_leather(player)
        elif words[0] == "pass":
            if len(words) != 1:
                raise ValueError("pass takes no arguments")
            target = min(self.position[1 - player] + 1, self.last)
            self.buttons[player] += target - self.position[player]
            self.move_token(player, target)
        elif words[0] == "buy":
            self.buy(player, words[1:])
        elif words[0] == "leather":
            raise ValueError("no leather patch is waiting to be placed")
        else:
            raise ValueError(f"unknown action {words[0]!r}")

    def check_square(self, name):
        row, col = parse_square(name)
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            raise ValueError(f"square {name} is off the board")
        return row, col

    def buy(self, player, args):
        if not args:
            raise ValueError("buy needs a patch id and squares")
        pid, names = args[0], args[1:]
        if pid not in self.offer():
            raise ValueError(f"patch {pid} is not on offer (offer: {' '.join(self.offer())})")
        patch = self.patches[pid]
        if patch["cost"] > self.buttons[player]:
            have = self.buttons[player]
            raise ValueError(f"patch {pid} costs {patch['cost']}, player has {have}")
        cells = {self.check_square(n) for n in names}
        if len(cells) != len(names):
            raise ValueError("a square is named twice")
        if not cells or normalise(cells) not in self.shapes[pid]:
            raise ValueError(f"squares do not form the shape of {pid}")
        if cells & self.covered[player]:
            raise ValueError("the patch overlaps a patch already on the quilt")
        index = self.circle.index(pid)
        self.circle = (
            self.circle[index + 1 :] + self.circle[:index]
        )  # the neutral token moves there
        self.buttons[player] -= patch["cost"]
        self.income[player] += patch["income"]
        self.place(player, cells)
        self.move_token(player, min(self.position[player] + patch["time"], self.last))

    def place(self, player, cells):
        if cells & self.covered[player]:
            raise ValueError("that square is already covered")
        self.covered[player] |= cells
        bonus = self.rules.get("bonus")
        if bonus and self.bonus_holder is None and self.has_full_window(player, bonus["square"]):
            self.bonus_holder = player

    def has_full_window(self, player, size):
        for r0 in range(self.rows - size + 1):
            for c0 in range(self.cols - size + 1):
                if all(
                    (r, c) in self.covered[player]
                    for r in range(r0, r0 + size)
                    for c in range(c0, c0 + size)
                ):
                    return True
        return False

    def move_token(self, player, target):
        start = self.position[player]
        self.position[player] = target
        self.top = player
        if target == self.last and self.first_at_last is None:
            self.first_at_last = player
        for mark in self.rules["track"]["income"]:
            if start < mark <= target:
                self.buttons[player] += self.income[player]
        crossed = [m for m in self.leather_on_track if start < m <= target]
        for mark in crossed:
            self.leather_on_track.remove(mark)
        # docs/rules.md R8.5: one claim per empty square, in track order; the rest are
        # discarded (or, under `leather_when_full: stay`, go back on the track)
        room = self.empty_squares(player)
        claimed, lost = crossed[:room], crossed[room:]
        if lost and self.rules.get("leather_when_full", "discard") == "stay":
            self.leather_on_track = sorted(self.leather_on_track + lost)
        self.pending = claimed
        self.pending_player = player if claimed else None
        self.settle_leather(player)

    def settle_leather(self, player):
        """Drop the claimed leather patches that no longer fit: the quilt is full."""
        if self.pending and self.empty_squares(player) == 0:
            if self.rules.get("leather_when_full", "discard") == "stay":
                self.leather_on_track = sorted(self.leather_on_track + self.pending)
            self.pending = []
        if not self.pending:
            self.pending_player = None

    # --- reporting
    def snapshot(self):
        return {
            "finished": self.finished(),
            "to_move": self.to_move(),
            "pending_leather": len(self.pending),
            "legal_moves": len(self.legal_move_texts()),
            "winner": self.winner(),
            "players": [
                {
                    "position": self.position[p],
                    "buttons": self.buttons[p],
                    "income": self.income[p],
                    "empty_squares": self.empty_squares(p),
                    "bonus": self.bonus_holder == p,
                    "score": self.score(p),
                }
                for p in (0, 1)
            ],
        }


# ----------------------------------------------------------------------------- public helpers


def legal_move_texts(game):
    """Every legal move text in the given Game (one per distinct placement)."""
    return game.legal_move_texts()


def replay(record):
    """Play a whole record and return the final Game (raises IllegalMove)."""
    game = Game(record["rules"], record["circle"])
    for number, text in enumerate(record["moves"], start=1):
        apply_move(game, number, text)
    return game


def apply_move(game, number, text):
    try:
        game.play(text)
    except ValueError as err:
        raise IllegalMove(f"move {number} {text!r}: {err}") from None


def replay_trace(record):
    """One snapshot for the start position and after every move."""
    game = Game(record["rules"], record["circle"])
    trace = [game.snapshot()]
    for number, text in enumerate(record["moves"], start=1):
        apply_move(game, number, text)
        trace.append(game.snapshot())
    return trace


def random_circle(rules, rng):
    """A shuffled circle ending with the start_after patch (if any)."""
    ids = [p["id"] for p in rules["patches"]]
    rng.shuffle(ids)
    start = rules.get("start_after")
    if start is not None:
        k = ids.index(start)
        ids = ids[k + 1 :] + ids[: k + 1]
    return ids


def random_record(rules, seed, circle=None):
    """A whole game of uniformly random legal moves."""
    rng = random.Random(seed)
    if circle is None:
        circle = random_circle(rules, rng)
    game = Game(rules, circle)
    moves = []
    while not game.finished():
        text = rng.choice(game.legal_move_texts())
        game.play(text)
        moves.append(text)
    return {"rules": rules, "circle": list(circle), "moves": moves}
