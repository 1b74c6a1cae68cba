/**
 * The question gate's default vocabulary (OVOS-COMMON-QUERY-1 §4), per language primary subtag: the words that make
 * an utterance a question and those that make it a command. The default of `commonQuery.gate.vocabulary`
 * (schema.ts); a deployment adds or replaces languages in its config. Yes/no openers ("is", "do", "can" …) are
 * grammar, not vocabulary: gate.ts handles them (its YES_NO table).
 */
export const DEFAULT_GATE_VOCABULARY: Readonly<Record<string, { readonly question: readonly string[]; readonly command: readonly string[] }>> = {
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
};
