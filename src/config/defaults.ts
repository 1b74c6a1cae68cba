/**
 * Every default in one block, units in the names (STYLE 7). The spec's recommended values are declared here once.
 * `loadConfig` (config.ts) layers the deployment's mycroft.conf, a JSON file, environment variables and flags over
 * this and validates the result.
 */

export type FallbackMode = 'accept_all' | 'whitelist' | 'blacklist';

/** An inclusive priority range [min, max] (OVOS-FALLBACK-1 §8.2). */
export type PriorityRange = readonly [number, number];

export interface GateConfig {
  /** OVOS-COMMON-QUERY-1 §4: false runs the contest for every utterance (still conformant). */
  readonly enabled: boolean;
  /** Utterances with fewer words than this are rejected unless they contain a question word. */
  readonly minWords: number;
  /** Per language (primary subtag, e.g. "en"): vocabulary. Unknown languages are accepted (bias to accept). */
  readonly vocabulary: Readonly<Record<string, { readonly question: readonly string[]; readonly command: readonly string[] }>>;
}

export interface Config {
  readonly bus: {
    /** Embedded server bind address; loopback by default. */
    readonly host: string;
    readonly port: number;
    readonly route: string;
    /** When set, connect to this existing OVOS messagebus instead of serving one. */
    readonly url: string | null;
    readonly maxFrameBytes: number;
    /** Client: websocket ping interval; a missed pong by the next ping drops the connection. */
    readonly heartbeatMs: number;
    readonly reconnectInitialMs: number;
    readonly reconnectMaxMs: number;
  };
  readonly log: { readonly level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' };
  /** Deployment default language (OVOS-SESSION-1 §3.2.7, last step). */
  readonly lang: string;
  /** The default session's pipeline (OVOS-PIPELINE-1 §5.5). */
  readonly pipeline: readonly string[];
  readonly orchestrator: {
    /** OVOS-PIPELINE-1 §4.4, RECOMMENDED 10 s. */
    readonly matchTimeoutMs: number;
    /** How long a bus skill's handler may run before ovos.intent.handler.error (timeout). */
    readonly handlerTimeoutMs: number;
  };
  readonly fallback: {
    /** OVOS-FALLBACK-1 §6.1: per-skill query timeout (deployment-defined; ovos-core uses 0.5 s). */
    readonly pingTimeoutMs: number;
    /** OVOS-FALLBACK-1 §8.2: pipeline_id → inclusive priority range. */
    readonly stages: Readonly<Record<string, PriorityRange>>;
    /** Deployer overrides of registered priorities (ovos-core `fallback_priorities`). */
    readonly priorities: Readonly<Record<string, number>>;
    readonly mode: FallbackMode;
    readonly whitelist: readonly string[];
    readonly blacklist: readonly string[];
    /** Circuit breaker (breaker.ts): consecutive ping timeouts that suspend a skill from every pool. */
    readonly suspendAfterTimeouts: number;
    /** Circuit breaker: first suspension period; each failed probe after it doubles it, up to 5 minutes. */
    readonly suspendMs: number;
    /** §3.4 bound: skills one session (including "default") may hold; re-registering an existing one always works. */
    readonly maxSkillsPerSession: number;
    /** §3.4 bound: sessions other than "default" that may hold session-scoped registrations. */
    readonly maxSessions: number;
    /**
     * Where the daemon keeps its registrations across restarts (registry-store.ts); null: nowhere. A leading
     * `$STATE/` is `$XDG_STATE_HOME/ovos-contests/` (default `~/.local/state/ovos-contests/`).
     */
    readonly registryFile: string | null;
  };
  readonly commonQuery: {
    readonly pipelineId: string;
    readonly gate: GateConfig;
    /** OVOS-COMMON-QUERY-1 §5. */
    readonly earlyStart: boolean;
    /** Appendix A: poll-window ceiling. */
    readonly pollWindowMs: number;
    /**
     * §6.3 early close: the poll closes this long after the ping unless a skill known to answer every poll is still
     * outstanding — Appendix A's 100 ms skill-side pong bound plus a transport allowance. It closes at once when a
     * claim is in hand and every skill the plugin knows of has answered.
     */
    readonly pollClaimBoundMs: number;
    /** Appendix A: collection window when no claimant gave latency_ms. */
    readonly collectionInitialMs: number;
    /** Appendix A: hard ceiling of the collection window. */
    readonly collectionCeilingMs: number;
    /** Appendix A: minimum self-confidence. */
    readonly minConfidence: number;
    /** Appendix A: fast-win threshold; null switches fast-win off. */
    readonly fastWinConfidence: number | null;
  };
  /** Start the bundled example skills as bus clients of the daemon. */
  readonly exampleSkills: boolean;
  /** Graceful shutdown (SIGTERM / SIGINT). */
  readonly shutdown: {
    /** How long utterances in flight — contests and skills' handlers — may take to finish before they are stopped. */
    readonly graceMs: number;
  };
  /** Prometheus metrics (src/metrics/): GET /metrics on 127.0.0.1:`port`; null = off (the default). */
  readonly metrics: { readonly port: number | null };
  /** The daemon's live inspector page (src/inspect/), served on loopback only. */
  readonly inspector: {
    readonly enabled: boolean;
    /** 0 = any free port (the URL is logged at start). */
    readonly port: number;
    /** Utterances the page can show (a ring: the oldest is forgotten first). */
    readonly recentUtterances: number;
  };
  /**
   * The protocol dialects spoken on the bus (src/dialect/): `spec` — the OVOS-*-1 topics; `legacy` — what shipping
   * OpenVoiceOS programs send today (ovos-wire-today.md). At least one must be on.
   */
  readonly dialects: { readonly spec: boolean; readonly legacy: boolean };
}

export const DEFAULT_CONFIG: Config = {
  bus: {
    host: '127.0.0.1',
    port: 8181,
    route: '/core',
    url: null,
    maxFrameBytes: 10 * 1024 * 1024,
    heartbeatMs: 10_000,
    reconnectInitialMs: 500,
    reconnectMaxMs: 30_000,
  },
  log: { level: 'info' },
  lang: 'en-US',
  // FALLBACK-1 §8.2 with COMMON-QUERY-1 §12: the high-confidence fallback skills first, common query behind them
  // (its contest runs from the utterance's arrival, §5, hidden behind fallback_high), then the rest of fallback.
  pipeline: ['fallback_high', 'common_query', 'fallback_medium', 'fallback_low'],
  orchestrator: { matchTimeoutMs: 10_000, handlerTimeoutMs: 30_000 },
  fallback: {
    pingTimeoutMs: 500,
    stages: { fallback_high: [0, 49], fallback_medium: [50, 74], fallback_low: [75, 100] },
    priorities: {},
    mode: 'accept_all',
    whitelist: [],
    blacklist: [],
    suspendAfterTimeouts: 3,
    suspendMs: 30_000,
    maxSkillsPerSession: 64,
    maxSessions: 1_000,
    registryFile: '$STATE/fallback-registry.json',
  },
  commonQuery: {
    pipelineId: 'common_query',
    gate: {
      enabled: true,
      // 1: a one-word query ("weather", "lichtgeschwindigkeit") may be a question; greetings and thanks are
      // stripped by the gate's framing rule before this count (§4.2 when in doubt, accept).
      minWords: 1,
      // Yes/no openers ("is", "do", "can" …) are grammar, not vocabulary: gate.ts handles them (its YES_NO table).
      vocabulary: {
        en: {
          question: [
            'what', 'whats', 'who', 'whos', 'whom', 'whose', 'when', 'where', 'wheres', 'why', 'which', 'how',
            'hows', 'tell me about', 'tell me', 'tell us', 'explain', 'define', 'describe', 'definition of',
            'meaning of',
            'i wonder', 'i want to know', 'look up', 'search for', 'find out',
          ],
          command: [
            'play', 'pause', 'resume', 'stop', 'skip', 'set', 'start', 'cancel', 'turn', 'switch', 'open',
            'close', 'call', 'remind', 'volume', 'mute', 'unmute', 'timer', 'alarm', 'lights',
            'shuffle', 'repeat', 'next song', 'next track', 'next episode', 'previous song', 'previous track', 'go',
            'make', 'wake me', 'snooze', 'add', 'create', 'take a', 'take me', 'write', 'text', 'send', 'tell',
            'tell me a joke', 'tell me a story', 'lock', 'unlock', 'arm the', 'disarm', 'record a', 'record the',
            'find my', 'ring', 'reboot', 'restart', 'shut', 'update', 'change', 'say that', 'say it again', 'speak',
            'talk', 'read', 'sing', 'navigate', 'give me directions', 'order a', 'book a', 'schedule a', 'delete',
            'clear', 'enable', 'disable', 'connect', 'pair', 'dim', 'brighten', 'listen to', 'hear', 'be quiet',
            'never mind', 'nevermind', 'louder', 'quieter', 'softer',
          ],
        },
        pt: {
          question: [
            'o que', 'o quê', 'que', 'quê', 'qual', 'quais', 'quem', 'quando', 'onde', 'aonde', 'por que', 'por quê',
            'porque', 'porquê', 'como', 'quanto', 'quanta', 'quantos', 'quantas', 'será que', 'fala-me sobre',
            'fala-me de', 'me fala sobre', 'diz-me', 'me diga', 'conta-me', 'explica', 'explique', 'defina',
            'sabes', 'você sabe',
          ],
          command: [
            'toca', 'toque', 'tocar', 'pausa', 'pausar', 'pare', 'parar', 'continua', 'continuar', 'retoma', 'salta',
            'pula', 'liga', 'ligar', 'desliga', 'desligar', 'acende', 'apaga', 'abre', 'abrir', 'fecha', 'fechar',
            'cancela', 'cancelar', 'põe', 'coloca', 'aumenta', 'diminui', 'lembra-me', 'lembre-me', 'volume',
            'silêncio', 'alarme', 'temporizador', 'luzes', 'pára', 'manda', 'envia', 'tira', 'faz um', 'conta uma',
            'próxima música', 'próxima faixa', 'música seguinte', 'baixa', 'pôr', 'colocar', 'aumentar',
            'diminuir', 'baixar', 'acender', 'apagar', 'mandar', 'enviar', 'tirar',
          ],
        },
        es: {
          question: [
            'qué', 'que', 'quién', 'quien', 'quiénes', 'cuál', 'cual', 'cuáles', 'cuándo', 'cuando', 'dónde',
            'donde', 'adónde', 'por qué', 'por que', 'cómo', 'como', 'cuánto', 'cuánta', 'cuántos', 'cuántas', 'cuanto',
            'háblame de', 'háblame sobre', 'hablame de', 'dime', 'explica', 'explícame', 'define', 'sabes',
          ],
          command: [
            'pon', 'reproduce', 'toca', 'pausa', 'detén', 'deten', 'continúa', 'reanuda', 'salta', 'enciende',
            'apaga', 'abre', 'cierra', 'cancela', 'llama', 'recuérdame', 'recuerdame', 'sube', 'baja', 'volumen',
            'silencio', 'alarma', 'temporizador', 'luces', 'manda', 'envía', 'haz', 'cuéntame un chiste',
            'cuenta un chiste', 'siguiente canción', 'canción siguiente', 'poner', 'reproducir', 'parar', 'encender',
            'apagar', 'subir', 'bajar', 'abrir', 'cerrar', 'llamar', 'cancelar',
          ],
        },
        fr: {
          question: [
            "qu'est-ce que", "qu'est-ce qui", "c'est quoi", 'que', 'quoi', 'qui', 'quel', 'quelle', 'quels',
            'quelles', 'lequel', 'laquelle', 'quand', 'où', 'pourquoi', 'comment', 'combien', 'est-ce que',
            'parle-moi de', 'dis-moi', 'explique', 'définis', 'sais-tu', 'connais-tu',
          ],
          command: [
            'joue', 'mets', 'lance', 'pause', 'arrête', 'arrete', 'stop', 'reprends', 'passe', 'règle', 'allume',
            'éteins', 'eteins', 'ouvre', 'ferme', 'annule', 'appelle', 'rappelle-moi', 'monte', 'baisse', 'volume',
            'silence', 'minuteur', 'alarme', 'réveil', 'lumière', 'lumières', 'envoie', 'prends', 'fais',
            'raconte-moi une blague', 'raconte une blague', 'chanson suivante', 'mettre', 'jouer', 'lancer', 'arrêter',
            'allumer', 'éteindre', 'ouvrir', 'fermer', 'appeler', 'baisser', 'monter', 'mettez', 'jouez', 'lancez',
            'arrêtez', 'allumez', 'éteignez', 'ouvrez', 'fermez',
          ],
        },
        de: {
          question: [
            'was', 'wer', 'wem', 'wen', 'wessen', 'wann', 'wo', 'woher', 'wohin', 'warum', 'wieso', 'weshalb',
            'welche', 'welcher', 'welches', 'welchen', 'wie', 'wieviel', 'erzähl mir von', 'erzähl mir über',
            'erzähle mir', 'sag mir', 'erkläre', 'erklär mir', 'definiere',
          ],
          command: [
            'spiel', 'spiele', 'pausiere', 'stopp', 'stop', 'weiter', 'überspringe', 'stell', 'stelle', 'starte',
            'brich', 'schalte', 'schalt', 'mach', 'öffne', 'schließe', 'ruf', 'rufe', 'erinnere', 'lauter', 'leiser',
            'lautstärke', 'stumm', 'timer', 'wecker', 'alarm', 'licht', 'lichter', 'stoppe', 'schick', 'schicke',
            'sende', 'lösche', 'nächstes lied', 'nächster titel', 'erzähl mir einen witz',
            'erzähle mir einen witz', 'erzähl einen witz',
          ],
        },
      },
    },
    earlyStart: true,
    pollWindowMs: 500,
    pollClaimBoundMs: 125, // Appendix A pong bound (100 ms) + 25 ms for the bus and a loaded event loop
    collectionInitialMs: 3_000,
    collectionCeilingMs: 5_000,
    minConfidence: 0.5,
    fastWinConfidence: 0.9,
  },
  exampleSkills: true,
  shutdown: { graceMs: 10_000 },
  metrics: { port: null },
  inspector: { enabled: true, port: 8182, recentUtterances: 200 },
  dialects: { spec: true, legacy: true },
};

/** OVOS names accepted as aliases of our pipeline ids (ovos-wire-today.md). */
export const PIPELINE_ALIASES: Readonly<Record<string, string>> = {
  'ovos-fallback-pipeline-plugin-high': 'fallback_high',
  'ovos-fallback-pipeline-plugin-medium': 'fallback_medium',
  'ovos-fallback-pipeline-plugin-low': 'fallback_low',
  'ovos-common-query-pipeline-plugin': 'common_query',
  common_qa: 'common_query', // ovos-core's legacy name (ovos-wire-today.md)
};

/** Our pipeline id for an id from a session or config (own keys only: "constructor" is not an alias). */
export function canonicalPipelineId(id: string): string {
  return Object.hasOwn(PIPELINE_ALIASES, id) ? PIPELINE_ALIASES[id]! : id;
}
