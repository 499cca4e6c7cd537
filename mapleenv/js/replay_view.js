/* Maple's offline replay viewer: mapleenv/replays.py inlines this file into every replay.

It reads the Showdown protocol log that the page already holds (script.battle-log-data)
and renders the battle turn by turn into #maple-replay: both sides' Pokémon with HP bars,
status, boosts and effects, the field, every event as a sentence, the winner, and the
agent's whole team and recorded choices (script.maple-replay-data). It loads nothing, so
a training box without internet still shows what the agent did. Names from the log reach
the page only as text (textContent), never as HTML: a hostile nickname cannot inject
markup. */
(function () {
  "use strict";

  const STATS = {
    atk: "Attack", def: "Defense", spa: "Sp. Atk", spd: "Sp. Def", spe: "Speed",
    accuracy: "accuracy", evasion: "evasiveness",
  };
  const SHORT = { atk: "Atk", def: "Def", spa: "SpA", spd: "SpD", spe: "Spe", accuracy: "Acc", evasion: "Eva" };
  const STATUS = {
    brn: "was burned", par: "is paralyzed", psn: "was poisoned",
    tox: "was badly poisoned", slp: "fell asleep", frz: "was frozen solid",
  };
  // Lines that carry nothing a reader needs (set-up, timers, requests, chat markup).
  const SILENT = new Set(["", ...("init title j J l L n N gametype gen upkeep t: request split " +
    "inactive inactiveoff timer raw html uhtml uhtmlchange c c: chat badge teampreview " +
    "clearpoke seed").split(" ")]);

  /** ``table[key]`` when it is the table's own entry (never an Object.prototype member
  such as "constructor" or "__proto__" that a server's line names), else undefined. */
  const own = (table, key) => (Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined);

  /** A DOM element with a class and children (strings become text nodes). */
  function el(tag, cls, ...children) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    node.append(...children.filter((c) => c !== null && c !== undefined && c !== ""));
    return node;
  }

  /** "245/301 par" or "0 fnt" -> {pct, text, status}; null when not an HP. */
  function parseHp(text) {
    const [value, status = ""] = (text || "").split(" ");
    if (value === "0") return { pct: 0, text: "0", status: "fnt" };
    const [cur, max] = value.split("/").map(Number);
    // a server's "1e999/100" or "nan/100" is not an HP
    if (!Number.isFinite(cur) || !Number.isFinite(max) || max <= 0 || cur < 0) return null;
    return { pct: Math.min(100, Math.round((100 * cur) / max)), text: value, status };
  }

  /** "move: Stealth Rock" / "item: Leftovers" -> "Stealth Rock". */
  const effect = (text) => (text || "").replace(/^(move|ability|item):\s*/, "");

  /** The battle's state and its events, grouped by turn, built from protocol lines. */
  class Battle {
    constructor(agentSide) {
      this.agent = agentSide;
      this.sides = Object.create(null);
      for (const id of ["p1", "p2"]) {
        this.sides[id] = { id, name: id, size: 0, mons: new Map(), active: null, conditions: new Set() };
      }
      this.field = new Set();
      this.weather = "";
      this.turns = [{ turn: 0, events: [] }];
      this.result = "";
    }

    /** The side ``id`` names: "p1" or "p2" only, else null. */
    side(id) {
      return id === "p1" || id === "p2" ? this.sides[id] : null;
    }

    mon(ident) {
      const side = this.side(ident.slice(0, 2)) || this.sides.p1;
      const name = ident.includes(": ") ? ident.slice(ident.indexOf(": ") + 2) : ident;
      if (!side.mons.has(name)) {
        side.mons.set(name, { name, species: name, hp: 100, hpText: "", status: "", boosts: {}, effects: new Set() });
      }
      return side.mons.get(name);
    }

    /** "Pika" for the agent's Pokémon, "the opposing Eevee" for the other side's. */
    label(ident, start) {
      const name = ident.includes(": ") ? ident.slice(ident.indexOf(": ") + 2) : ident;
      if (!this.agent || ident.slice(0, 2) === this.agent) return name;
      return (start ? "The opposing " : "the opposing ") + name;
    }

    say(text, kind) {
      this.turns[this.turns.length - 1].events.push({ text, kind: kind || "" });
    }

    setHp(ident, hp) {
      const value = parseHp(hp);
      if (!value) return null;
      const mon = this.mon(ident);
      const before = mon.hp;
      mon.hp = value.pct;
      mon.hpText = value.text;
      mon.status = value.status;
      return before;
    }

    switchIn(args) {
      const side = this.side(args[0].slice(0, 2));
      if (!side) return;
      const previous = side.active && side.mons.get(side.active);
      if (previous) { previous.boosts = {}; previous.effects.clear(); }
      const mon = this.mon(args[0]);
      mon.species = (args[1] || mon.species).split(",")[0];
      side.active = mon.name;
      this.setHp(args[0], args[2]);
      this.say(`${side.name} sent out ${mon.name}!`, "switch");
    }

    hpChange(args, verb) {
      const before = this.setHp(args[0], args[1]);
      if (before === null) return;
      const source = args.slice(2).find((a) => a.startsWith("[from]"));
      const lost = Math.abs(before - this.mon(args[0]).hp);
      this.say(`(${this.label(args[0], true)} ${verb} ${lost}% of its health!)` +
        (source ? ` ${source}` : ""), verb === "lost" ? "damage" : "heal");
    }

    /** The end-of-block state of both sides and the field, for rendering. */
    snapshot() {
      const copy = (side) => ({
        ...side, conditions: [...side.conditions],
        mons: [...side.mons.values()].map((m) => ({ ...m, boosts: { ...m.boosts }, effects: [...m.effects] })),
      });
      this.turns[this.turns.length - 1].state = {
        p1: copy(this.sides.p1), p2: copy(this.sides.p2),
        field: [this.weather, ...this.field].filter(Boolean),
      };
    }

    line(text) {
      const parts = text.startsWith("|") ? text.split("|").slice(1) : [];
      const kind = parts[0];
      if (!parts.length || SILENT.has(kind)) return;
      const args = parts.slice(1).concat(["", "", ""]);
      const handler = own(HANDLERS, kind);
      if (handler) handler(this, args);
      else this.say(parts.filter(Boolean).join(" "), "other");
    }
  }

  const HANDLERS = {
    player: (b, a) => { if (b.side(a[0]) && a[1]) b.side(a[0]).name = a[1]; },
    teamsize: (b, a) => { if (b.side(a[0])) b.side(a[0]).size = Math.min(24, Number(a[1]) || 0); },
    poke: (b, a) => { b.mon(`${a[0]}: ${a[1].split(",")[0]}`); },
    tier: (b, a) => b.say(a[0], "title"),
    rule: (b, a) => b.say(a[0], "small"),
    start: (b) => b.say(`Battle started between ${b.sides.p1.name} and ${b.sides.p2.name}!`, "small"),
    turn: (b, a) => { b.snapshot(); b.turns.push({ turn: Number(a[0]), events: [] }); },
    switch: (b, a) => b.switchIn(a),
    drag: (b, a) => b.switchIn(a),
    detailschange: (b, a) => { b.mon(a[0]).species = a[1].split(",")[0]; },
    move: (b, a) => b.say(`${b.label(a[0], true)} used ${a[1]}!`, "move"),
    "-damage": (b, a) => b.hpChange(a, "lost"),
    "-heal": (b, a) => b.hpChange(a, "restored"),
    "-sethp": (b, a) => { b.setHp(a[0], a[1]); },
    cant: (b, a) => b.say(`${b.label(a[0], true)} can't move (${effect(a[1])})!`, "effect"),
    faint: (b, a) => {
      const mon = b.mon(a[0]);
      mon.hp = 0; mon.status = "fnt";
      b.say(`${b.label(a[0], true)} fainted!`, "faint");
    },
    "-status": (b, a) => {
      b.mon(a[0]).status = a[1];
      b.say(`${b.label(a[0], true)} ${own(STATUS, a[1]) || "got " + a[1]}!`, "effect");
    },
    "-curestatus": (b, a) => {
      b.mon(a[0]).status = "";
      b.say(`${b.label(a[0], true)} was cured of ${a[1]}.`, "effect");
    },
    "-boost": (b, a) => boost(b, a, 1),
    "-unboost": (b, a) => boost(b, a, -1),
    "-clearallboost": (b) => { for (const s of Object.values(b.sides)) for (const m of s.mons.values()) m.boosts = {}; },
    "-start": (b, a) => {
      b.mon(a[0]).effects.add(effect(a[1]));
      b.say(`${b.label(a[0], true)}: ${effect(a[1])} started.`, "effect");
    },
    "-end": (b, a) => {
      b.mon(a[0]).effects.delete(effect(a[1]));
      b.say(`${b.label(a[0], true)}: ${effect(a[1])} ended.`, "effect");
    },
    "-weather": (b, a) => {
      const weather = a[0] === "none" ? "" : a[0];
      if (weather !== b.weather) b.say(weather ? `Weather: ${weather}.` : `The ${b.weather} ended.`, "field");
      b.weather = weather;
    },
    "-fieldstart": (b, a) => { b.field.add(effect(a[0])); b.say(`${effect(a[0])} started.`, "field"); },
    "-fieldend": (b, a) => { b.field.delete(effect(a[0])); b.say(`${effect(a[0])} ended.`, "field"); },
    "-sidestart": (b, a) => sideCondition(b, a, true),
    "-sideend": (b, a) => sideCondition(b, a, false),
    "-terastallize": (b, a) => {
      b.mon(a[0]).effects.add(`Tera ${a[1]}`);
      b.say(`${b.label(a[0], true)} has Terastallized into the ${a[1]}-type!`, "effect");
    },
    "-supereffective": (b) => b.say("It's super effective!", "effect"),
    "-resisted": (b) => b.say("It's not very effective...", "effect"),
    "-crit": (b) => b.say("A critical hit!", "effect"),
    "-immune": (b, a) => b.say(`It doesn't affect ${b.label(a[0])}...`, "effect"),
    "-miss": (b, a) => b.say(`${b.label(a[1] || a[0], true)} avoided the attack!`, "effect"),
    "-fail": (b) => b.say("But it failed!", "effect"),
    "-ability": (b, a) => b.say(`[${b.label(a[0], true)}'s ${a[1]}]`, "effect"),
    "-item": (b, a) => b.say(`${b.label(a[0], true)} has ${a[1]}.`, "effect"),
    "-enditem": (b, a) => b.say(`${b.label(a[0], true)}'s ${a[1]} was used up or lost.`, "effect"),
    win: (b, a) => { b.result = `${a[0]} won the battle!`; b.say(b.result, "result"); },
    tie: (b) => { b.result = "The battle ended in a tie!"; b.say(b.result, "result"); },
  };

  function boost(b, a, sign) {
    const mon = b.mon(a[0]);
    const amount = Math.min(12, Number(a[2]) || 0);
    if (own(STATS, a[1]) !== undefined) mon.boosts[a[1]] = (mon.boosts[a[1]] || 0) + sign * amount;
    const size = own({ 2: " sharply", 3: " drastically" }, amount) || "";
    b.say(`${b.label(a[0], true)}'s ${own(STATS, a[1]) || a[1]} ${sign > 0 ? "rose" : "fell"}${size}!`, "effect");
  }

  function sideCondition(b, a, started) {
    const side = b.side(a[0].slice(0, 2));
    if (!side) return;
    const name = effect(a[1]);
    if (started) side.conditions.add(name); else side.conditions.delete(name);
    b.say(`${name} ${started ? "set on" : "ended on"} ${side.name}'s side.`, "field");
  }

  /** One Pokémon: name, species, status, HP bar, boosts and effects. */
  function renderMon(mon, active) {
    const fainted = mon.hp === 0 || mon.status === "fnt";
    const pct = Math.max(0, Math.min(100, mon.hp));
    const colour = pct > 50 ? "high" : pct > 20 ? "mid" : "low";
    const fill = el("div", `mr-fill mr-${colour}`);
    fill.style.width = `${pct}%`;
    const status = mon.status && mon.status !== "fnt" ? el("span", "mr-status", mon.status.toUpperCase()) : null;
    const boosts = Object.entries(mon.boosts).filter(([, v]) => v)
      .map(([k, v]) => `${v > 0 ? "+" : ""}${v} ${own(SHORT, k) || k}`);
    const tags = boosts.concat(mon.effects);
    return el("div", `mr-mon${active ? " mr-active" : ""}${fainted ? " mr-fainted" : ""}`,
      el("div", "mr-name", mon.name, mon.species !== mon.name ? el("small", "", ` (${mon.species})`) : null, status),
      el("div", "mr-hp", el("div", "mr-bar", fill), el("span", "mr-pct", fainted ? "fainted" : `${pct}%`)),
      tags.length ? el("div", "mr-tags", tags.join(" · ")) : null);
  }

  function renderSide(side, agent) {
    const mons = side.mons.slice().sort((x, y) => (y.name === side.active) - (x.name === side.active));
    const hidden = Math.max(0, side.size - mons.length);
    return el("div", `mr-side mr-${side.id}`,
      el("div", "mr-player", side.name, side.id === agent ? el("span", "mr-agent", "agent") : null),
      side.conditions.length ? el("div", "mr-tags", side.conditions.join(" · ")) : null,
      ...mons.map((m) => renderMon(m, m.name === side.active)),
      hidden ? el("div", "mr-unseen", `${hidden} not yet seen`) : null);
  }

  function renderDecision(d) {
    const p = typeof d.probability === "number" ? ` (p = ${d.probability.toFixed(2)})` : "";
    return el("li", "mr-ev mr-ev-decision", `Agent chose ${d.choice}${p}`);
  }

  function renderTurn(block, agent) {
    const events = el("ul", "mr-events", ...block.events.map((e) =>
      e.decision ? renderDecision(e.decision) : el("li", `mr-ev mr-ev-${e.kind}`, e.text)));
    const state = block.state;
    return el("section", "mr-turn",
      el("h2", "", block.turn ? `Turn ${block.turn}` : "Start",
        state.field.length ? el("span", "mr-fieldstate", state.field.join(" · ")) : null),
      el("div", "mr-row", renderSide(state.p1, agent), events, renderSide(state.p2, agent)));
  }

  function main() {
    const root = document.getElementById("maple-replay");
    const data = document.querySelector("script.battle-log-data");
    if (!root || !data) return;
    const lines = data.textContent.replace(/\\\//g, "/").replace(/<\\!--/g, "<\x21--").split("\n");
    const recorded = document.querySelector("script.maple-replay-data");
    const extra = recorded ? JSON.parse(recorded.textContent) : {};
    const decisions = extra.decisions || [];
    const battle = new Battle(extra.side || "");
    if (battle.side(battle.agent)) for (const name of extra.team || []) battle.mon(`${battle.agent}: ${name}`);
    // each choice goes where it was made: before the first line the agent had not yet read
    let next = 0;
    const chooseUpTo = (i) => {
      for (; next < decisions.length && decisions[next].line <= i; next++) {
        battle.turns[battle.turns.length - 1].events.push({ decision: decisions[next] });
      }
    };
    lines.forEach((line, i) => { chooseUpTo(i); battle.line(line); });
    chooseUpTo(Infinity);
    battle.snapshot();
    const agent = battle.side(battle.agent);
    root.append(
      el("div", "mr-result", battle.result || "Unfinished battle",
        agent ? el("small", "", ` — the agent played ${agent.name} (${agent.id})`) : null),
      ...battle.turns.map((block) => renderTurn(block, battle.agent)));
    const text = document.querySelector(".battle-log-inline");
    if (text) text.hidden = true;  // the same battle as plain text, for browsers without JS
    const toggle = el("button", "mr-toggle", "Show the text log");
    toggle.onclick = () => { text.hidden = !text.hidden; };
    if (text) root.prepend(toggle);
  }

  main();
})();
